import { createHmac } from 'node:crypto';
import { ServiceError } from '../errors.ts';
import { nowIso } from '../ids.ts';
import { isEgressError } from '../net/egress-error.ts';
import { safeFetch } from '../net/safe-fetch.ts';
import type { Services } from '../services.ts';
import { databaseAccess, queryDatabase, type DatabaseConfig } from './database-client.ts';
import { integrationUnderTest, type IntegrationType } from './integrations.ts';

/**
 * The live integration tester (SPEC "Integrations", test endpoint): contacts
 * the provider with a test message or query. Credential values never appear
 * in a result or an error (scrub).
 */

type Config = Record<string, unknown>;

/** Removes every credential value (and URL paths/queries, which often carry tokens) from a message. */
function scrub(message: string, secrets: Config): string {
  let out = message;
  const values: string[] = [];
  const collect = (value: unknown) => {
    if (typeof value === 'string' && value.length >= 3) values.push(value);
    else if (value && typeof value === 'object') Object.values(value).forEach(collect);
  };
  collect(secrets);
  for (const value of values) {
    out = out.split(value).join('[redacted]');
    try {
      const url = new URL(value);
      if (url.pathname.length > 1) out = out.split(url.pathname).join('/[redacted]');
      if (url.search) out = out.split(url.search).join('');
      if (url.password) out = out.split(url.password).join('[redacted]');
    } catch {
      // not a URL
    }
  }
  // Any remaining URL: keep only its origin.
  return out.replace(/(https?:\/\/[^/\s"'?#]+)[^\s"',)]*/g, '$1/…');
}

const testFailed = (message: string, secrets: Config) => new ServiceError(400, 'integration_test_failed', scrub(message, secrets));

async function postTest(
  services: Pick<Services, 'config'>,
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

/** Why a type is not tested live: its provider client is not part of this gateway. */
const UNTESTED: Partial<Record<IntegrationType, string>> = {
  telegram: 'Telegram',
  sendgrid: 'SendGrid',
  resend: 'Resend',
  safe: 'the Safe transaction service',
  'ai-gateway': 'the AI gateway',
};

export interface IntegrationTestResult {
  /** `success`: the provider was contacted and answered. `untested`: nothing was sent; `message` says why. */
  status: 'success' | 'untested';
  message: string;
}

/**
 * Tests an integration with optional temporary overrides (the saved config is
 * not changed). `success` only when the provider was really contacted; a type
 * that cannot be tested live answers `untested` with the reason. Failure: 400
 * `integration_test_failed`, message without credentials.
 */
export async function testIntegration(
  services: Pick<Services, 'store' | 'secrets' | 'config'>,
  organizationId: string,
  integrationId: string,
  configOverrides?: Config,
): Promise<IntegrationTestResult> {
  const integration = await integrationUnderTest(services, organizationId, integrationId, configOverrides);
  const { config, secrets, type } = integration;
  const text = `Flowgate test notification for integration "${integration.name}".`;

  switch (type) {
    case 'webhook': {
      const body = { type: 'flowgate.test', message: text, integrationId: integration.id, sentAt: nowIso() };
      const headers = { ...((config.headers as Record<string, string> | undefined) ?? {}) };
      if (typeof config.secret === 'string' && config.secret) {
        headers['x-flowgate-signature'] = `sha256=${createHmac('sha256', config.secret).update(JSON.stringify(body)).digest('hex')}`;
      }
      return {
        status: 'success',
        message: await postTest(services, String(config.url), body, headers, secrets, (config.method as string | undefined) ?? 'POST'),
      };
    }
    case 'discord':
      return { status: 'success', message: await postTest(services, String(config.webhookUrl), { content: text }, {}, secrets) };
    case 'slack':
      if (typeof config.webhookUrl === 'string') {
        return { status: 'success', message: await postTest(services, config.webhookUrl, { text }, {}, secrets) };
      }
      return {
        status: 'untested',
        message: 'Not tested: only a Slack webhookUrl can be tested live, and this integration has a bot token only. Its configuration is valid.',
      };
    case 'database':
      return { status: 'success', message: await testDatabase(services, config, secrets) };
    case 'web3':
      return {
        status: 'untested',
        message: `Not tested: a web3 integration is an address (${integration.address}), with no service to contact. Its configuration is valid.`,
      };
    default: {
      const provider = UNTESTED[type] ?? type;
      return {
        status: 'untested',
        message: `Not tested: this gateway has no client for ${provider} yet, so nothing was sent and the credentials were not checked. The configuration is valid.`,
      };
    }
  }
}
