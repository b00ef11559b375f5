import { createHmac } from 'node:crypto';
import { isServiceError, ServiceError } from '../errors.ts';
import { nowIso } from '../ids.ts';
import { isEgressError } from '../net/egress-error.ts';
import { safeFetch } from '../net/safe-fetch.ts';
import type { EgressSlot } from '../net/egress-slots.ts';
import type { Services } from '../services.ts';
import { scrubSecrets } from '../text/scrub-secrets.ts';
import { checkDiscord } from '../notify/discord.ts';
import { checkResend } from '../notify/resend.ts';
import { checkSendgrid } from '../notify/sendgrid.ts';
import { checkSlack } from '../notify/slack.ts';
import { checkTelegram } from '../notify/telegram.ts';
import { checkAiGateway, checkSafe } from '../notify/service-checks.ts';
import type { SendOptions } from '../notify/send-options.ts';
import { databaseAccess, queryDatabase, type DatabaseConfig } from './database-client.ts';
import { integrationUnderTest } from './integrations.ts';

/**
 * The live integration tester (SPEC "Integrations", test endpoint): contacts
 * the provider with a test message or query. Credential values never appear
 * in a result or an error (scrub).
 */

type Config = Record<string, unknown>;

/** Credential values out, and any remaining URL cut to its origin (paths and queries often carry tokens). */
function scrub(message: string, secrets: Config): string {
  return scrubSecrets(message, [secrets]).replace(/(https?:\/\/[^/\s"'?#]+)[^\s"',)]*/g, '$1/…');
}

const testFailed = (message: string, secrets: Config) => new ServiceError(400, 'integration_test_failed', scrub(message, secrets));

async function postTest(
  services: Pick<Services, 'config'>,
  slot: EgressSlot,
  url: string,
  body: unknown,
  headers: Record<string, string>,
  secrets: Config,
  method = 'POST',
): Promise<string> {
  const host = (() => {
    try {
      return new URL(url).host;
    } catch {
      return 'the target';
    }
  })();
  const payload = JSON.stringify(body);
  try {
    const res = await safeFetch(url, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: payload,
      timeoutMs: 10_000,
      maxResponseBytes: 64 * 1024,
      allowList: services.config.httpAllowHosts,
      slot,
    });
    if (res.status < 200 || res.status >= 300) throw testFailed(`Test request to ${host} answered HTTP ${res.status} ${res.statusText}`.trim(), secrets);
    return `Test message delivered to ${host} (HTTP ${res.status}).`;
  } catch (err) {
    if (err instanceof ServiceError) throw err;
    const reason = isEgressError(err) ? `${err.kind}: ${err.message}` : (err as Error).message;
    throw testFailed(`Test request to ${host} failed (${reason})`, secrets);
  }
}

/** Runs `select 1` through the same client (and the same path and egress checks) the Database Query step uses. */
async function testDatabase(services: Pick<Services, 'config'>, config: Config, secrets: Config): Promise<string> {
  try {
    await queryDatabase(databaseAccess(services.config), config as DatabaseConfig, 'select 1', [], AbortSignal.timeout(15_000));
    return `Connected to the ${config.driver} database and ran "select 1".`;
  } catch (error) {
    throw testFailed(`Could not query the database: ${error instanceof Error ? error.message : String(error)}`, secrets);
  }
}

/** A provider check's answer, or its failure as 400 integration_test_failed without credentials. */
async function providerCheck(check: () => Promise<string>, secrets: Config): Promise<string> {
  try {
    return await check();
  } catch (error) {
    if (isServiceError(error) || isEgressError(error)) throw testFailed(error.message, secrets);
    throw error;
  }
}

const str = (value: unknown) => (typeof value === 'string' && value ? value : undefined);

export interface IntegrationTestResult {
  /** `success`: the provider was contacted and answered. `untested` (web3 only: an address has no service): nothing was sent. */
  status: 'success' | 'untested';
  message: string;
}

/**
 * Tests an integration with optional temporary overrides (the saved config is
 * not changed). `success` only when the provider was really contacted, at its
 * cheapest authenticated endpoint (or a test message where that is the only
 * check, webhooks); a web3 address answers `untested`. Failure: 400
 * `integration_test_failed`, message without credentials.
 */
export async function testIntegration(
  services: Pick<Services, 'store' | 'secrets' | 'config' | 'egressSlots'>,
  organizationId: string,
  integrationId: string,
  configOverrides?: Config,
): Promise<IntegrationTestResult> {
  const integration = await integrationUnderTest(services, organizationId, integrationId, configOverrides);
  const { config, secrets, type } = integration;
  const text = `Flowgate test notification for integration "${integration.name}".`;
  // One attempt within 15 s: a test answers what the provider says now.
  // A test is a request on the organization's behalf like its steps': held to the same caps on open requests.
  const slot = { slots: services.egressSlots, organizationId };
  const options: SendOptions = { allowList: services.config.httpAllowHosts, budgetMs: 15_000, slot };

  switch (type) {
    case 'webhook': {
      const body = { type: 'flowgate.test', message: text, integrationId: integration.id, sentAt: nowIso() };
      const headers = { ...((config.headers as Record<string, string> | undefined) ?? {}) };
      if (typeof config.secret === 'string' && config.secret) {
        headers['x-flowgate-signature'] = `sha256=${createHmac('sha256', config.secret).update(JSON.stringify(body)).digest('hex')}`;
      }
      return {
        status: 'success',
        message: await postTest(services, slot, String(config.url), body, headers, secrets, (config.method as string | undefined) ?? 'POST'),
      };
    }
    case 'discord':
      return { status: 'success', message: await providerCheck(() => checkDiscord(config as never, options), secrets) };
    case 'slack':
      return { status: 'success', message: await providerCheck(() => checkSlack(config, text, options), secrets) };
    case 'telegram':
      return { status: 'success', message: await providerCheck(() => checkTelegram(config as never, options), secrets) };
    case 'sendgrid':
      return { status: 'success', message: await providerCheck(() => checkSendgrid(config as never, str(config.apiBaseUrl), options), secrets) };
    case 'resend':
      return { status: 'success', message: await providerCheck(() => checkResend(config as never, str(config.apiBaseUrl), options), secrets) };
    case 'safe':
      return { status: 'success', message: await providerCheck(() => checkSafe(config as never, options), secrets) };
    case 'ai-gateway':
      return { status: 'success', message: await providerCheck(() => checkAiGateway(config as never, options), secrets) };
    case 'database':
      return { status: 'success', message: await testDatabase(services, config, secrets) };
    case 'web3':
      return {
        status: 'untested',
        message: `Not tested: a web3 integration is an address (${integration.address}), with no service to contact. Its configuration is valid.`,
      };
  }
}
