import { hint } from './fields.ts';
import type { PluginActionSpec } from './types.ts';

/**
 * Outbound messages. Chat and e-mail providers read their credentials from an
 * integration (named by integrationId); the plain webhook carries its URL in
 * config and needs none.
 */

const delivered = {
  success: 'boolean',
  messageId: 'string (provider message id, when the provider returns one)',
  delivery: 'object ({attempts, lastStatus, durationMs}: 429 and 5xx answers are retried with backoff)',
} as const;

const notification = (spec: Omit<PluginActionSpec, 'category'>): PluginActionSpec => ({ ...spec, category: 'Notifications' });

/** The two e-mail providers take the same fields; only the integration differs. */
function emailAction(provider: 'sendgrid' | 'resend', name: string) {
  return notification({
    actionType: `${provider}/send-email`,
    label: `Send Email (${name})`,
    description: `Sends an e-mail through a ${name} integration (from its fromEmail). A body with HTML tags is sent as HTML plus a text copy.`,
    integration: provider,
    requiredFields: {
      integrationId: hint.integrationId(provider),
      emailTo: 'string (recipient e-mail address; comma-separated for several)',
      emailSubject: hint.templated('subject line'),
      emailBody: hint.templated('body text or HTML'),
    },
    optionalFields: {},
    outputFields: delivered,
    requiresCredentials: true,
    featureId: 'notifications-email',
  });
}

export const notificationActions: readonly PluginActionSpec[] = [
  notification({
    actionType: 'discord/send-message',
    label: 'Send Discord Message',
    description: 'Posts a message (up to 2000 characters; longer is cut with a marker) to the Discord channel of a Discord webhook integration.',
    integration: 'discord',
    requiredFields: { integrationId: hint.integrationId('discord'), message: hint.templated('message text') },
    optionalFields: { username: 'string (display name override for the post)' },
    outputFields: delivered,
    requiresCredentials: true,
    featureId: 'notifications-chat',
  }),
  notification({
    actionType: 'slack/send-message',
    label: 'Send Slack Message',
    description: 'Posts a message to a Slack channel through a Slack workspace integration.',
    integration: 'slack',
    requiredFields: {
      integrationId: hint.integrationId('slack'),
      message: hint.templated('message text'),
    },
    optionalFields: {
      slackChannel:
        'string (channel id or #channel-name; needed with a bot token unless the integration sets channel; an incoming webhook posts to its own channel)',
    },
    outputFields: delivered,
    requiresCredentials: true,
    featureId: 'notifications-chat',
  }),
  notification({
    actionType: 'telegram/send-message',
    label: 'Send Telegram Message',
    description: 'Sends a message (up to 4096 characters; longer is cut with a marker) to a Telegram chat through a Telegram bot integration.',
    integration: 'telegram',
    requiredFields: {
      integrationId: hint.integrationId('telegram'),
      chatId: 'string (chat id, e.g. "-1001234567890", or @channelusername)',
      message: hint.templated('message text'),
    },
    optionalFields: { parseMode: 'string (Markdown | MarkdownV2 | HTML)' },
    outputFields: delivered,
    requiresCredentials: true,
    featureId: 'notifications-chat',
  }),
  emailAction('sendgrid', 'SendGrid'),
  emailAction('resend', 'Resend'),
  notification({
    actionType: 'webhook/send-webhook',
    label: 'Send Webhook',
    description: 'Sends an HTTP request with a JSON payload to any URL, e.g. to notify another system.',
    integration: 'webhook',
    requiredFields: {
      webhookUrl: hint.templated('http(s) URL'),
      webhookMethod: 'string (POST | PUT | PATCH | GET | DELETE)',
    },
    optionalFields: {
      webhookHeaders: 'string (JSON object of header names to values)',
      webhookPayload: hint.templated('JSON text sent as the body'),
    },
    outputFields: {
      success: 'boolean',
      status: 'number (HTTP status code)',
      data: 'object | string (parsed JSON response, or the raw text)',
    },
    requiresCredentials: false,
    featureId: 'outbound-webhooks',
  }),
];
