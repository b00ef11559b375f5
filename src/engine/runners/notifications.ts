import { isServiceError } from '../../errors.ts';
import { DeliveryError } from '../../notify/delivery.ts';
import { sendDiscordMessage } from '../../notify/discord.ts';
import { bodyParts, sendEmail, type EmailProvider } from '../../notify/email.ts';
import { sendSlackMessage } from '../../notify/slack.ts';
import { sendTelegramMessage } from '../../notify/telegram.ts';
import { getIntegrationForRun } from '../../org/integrations.ts';
import { assertCatalogEmailBudget } from './catalog-email-budget.ts';
import { allowListFor, egressSlotFor } from './http-request.ts';
import { NodeError, type NodeResult, type NodeRunContext, type NodeRunner } from './types.ts';

/**
 * The chat and e-mail steps: each reads its integration's credentials
 * (never logged: they are not in the step's config), sends through the
 * provider client in src/notify, and answers `{success, messageId?,
 * delivery: {attempts, lastStatus, durationMs}}`. Templates are resolved by
 * the executor before the runner sees the config. A provider that does not
 * take the message fails the step with its own words and the same
 * `delivery` log; bad config fails it with the field named.
 */

type Config = Record<string, unknown>;

async function integrationOf(ctx: NodeRunContext, config: Config, type: string): Promise<Config> {
  return (await integrationRowOf(ctx, config, type)).config;
}

async function integrationRowOf(ctx: NodeRunContext, config: Config, type: string): Promise<{ name: string; config: Config }> {
  const id = config.integrationId;
  if (typeof id !== 'string' || !id.trim()) throw new NodeError(`integrationId is required: the id of a ${type} integration (list_integrations).`);
  const integration = await getIntegrationForRun(ctx.services, ctx.organizationId, id.trim()).catch((error: unknown) => {
    throw new NodeError(error instanceof Error ? error.message : String(error));
  });
  if (integration.type !== type) {
    throw new NodeError(`Integration ${integration.id} is a ${integration.type} integration; ${ctx.node.actionType} needs a ${type} integration.`);
  }
  return integration;
}

const text = (value: unknown): string => (value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value));

function required(config: Config, field: string, what: string): string {
  const value = text(config[field]);
  if (!value.trim()) throw new NodeError(`${field} is required: ${what}.`, { field });
  return value;
}

const optional = (config: Config, field: string): string | undefined => text(config[field]).trim() || undefined;

/** Runs a send; a refusal becomes the step's failure with the attempt log, config errors the step's error. */
async function outcome(send: () => Promise<{ messageId?: string; truncated?: boolean; delivery: unknown }>): Promise<NodeResult> {
  try {
    const { messageId, truncated, delivery } = await send();
    return { success: true, ...(messageId !== undefined ? { messageId } : {}), ...(truncated ? { truncated } : {}), delivery };
  } catch (error) {
    if (error instanceof DeliveryError) return { success: false, error: error.message, delivery: error.log };
    if (isServiceError(error)) throw new NodeError(error.message, error.details);
    throw error;
  }
}

const optionsOf = (ctx: NodeRunContext) => ({ allowList: allowListFor(ctx), signal: ctx.signal, slot: egressSlotFor(ctx) });
const str = (value: unknown) => (typeof value === 'string' && value ? value : undefined);

export const discordRunner: NodeRunner = async (config, ctx) => {
  const integration = await integrationOf(ctx, config, 'discord');
  const content = required(config, 'message', 'the message text');
  return outcome(() =>
    sendDiscordMessage(
      { webhookUrl: String(integration.webhookUrl), apiBaseUrl: str(integration.apiBaseUrl) },
      { content, username: optional(config, 'username') },
      optionsOf(ctx),
    ),
  );
};

export const slackRunner: NodeRunner = async (config, ctx) => {
  const integration = await integrationOf(ctx, config, 'slack');
  const message = required(config, 'message', 'the message text');
  return outcome(() =>
    sendSlackMessage(
      {
        webhookUrl: str(integration.webhookUrl),
        botToken: str(integration.botToken),
        channel: str(integration.channel),
        apiBaseUrl: str(integration.apiBaseUrl),
      },
      { channel: optional(config, 'slackChannel'), text: message },
      optionsOf(ctx),
    ),
  );
};

export const telegramRunner: NodeRunner = async (config, ctx) => {
  const integration = await integrationOf(ctx, config, 'telegram');
  const message = required(config, 'message', 'the message text');
  return outcome(() =>
    sendTelegramMessage(
      {
        botToken: String(integration.botToken),
        chatId: integration.chatId as string | number | undefined,
        apiBaseUrl: str(integration.apiBaseUrl),
      },
      { chatId: optional(config, 'chatId'), text: message, parseMode: optional(config, 'parseMode') },
      optionsOf(ctx),
    ),
  );
};

function emailRunner(provider: EmailProvider): NodeRunner {
  return async (config, ctx) => {
    const { name, config: integration } = await integrationRowOf(ctx, config, provider);
    const to = required(config, 'emailTo', 'the recipient address (comma-separated for several)');
    const subject = required(config, 'emailSubject', 'the subject line');
    const body = required(config, 'emailBody', 'the body text or HTML');
    await assertCatalogEmailBudget(ctx, { name }, to);
    return outcome(() =>
      sendEmail({
        provider,
        credentials: { apiKey: String(integration.apiKey) },
        apiBaseUrl: str(integration.apiBaseUrl),
        message: { from: { email: String(integration.fromEmail ?? ''), name: str(integration.fromName) }, to, subject, ...bodyParts(body) },
        // One key per step of a run (and per For Each iteration): a repeated request never sends a second e-mail.
        idempotencyKey: `flowgate:${ctx.executionId}:${ctx.node.id}:${ctx.iterationIndex ?? '-'}`,
        ...optionsOf(ctx),
      }),
    );
  };
}

export const notificationRunners: Readonly<Record<string, NodeRunner>> = {
  'discord/send-message': discordRunner,
  'slack/send-message': slackRunner,
  'telegram/send-message': telegramRunner,
  'sendgrid/send-email': emailRunner('sendgrid'),
  'resend/send-email': emailRunner('resend'),
};
