import { resolveSqlitePath, SqliteGuardError } from './sqlite-guard.ts';
import { connectionStringProblem } from './pg-connection-string.ts';
import { getAddress, isAddress } from 'viem';
import { z } from 'zod';
import type { Services } from '../services.ts';
import type { Store } from '../store/db.ts';
import { assertRoom } from './quotas.ts';
import { newId, nowIso } from '../ids.ts';
import { badRequest, notFound, ServiceError } from '../errors.ts';
import { suggest } from '../text/suggest.ts';

/**
 * Organization integrations (SPEC "Integration", "Integrations"). Each type
 * declares which config fields are credentials: those are sealed with the
 * master key (aad `integration:<id>`) and never returned by any endpoint,
 * log or error; the rest is stored as JSON and returned by get. This module
 * is the CRUD; the live tester is integration-tester.ts.
 */

export const INTEGRATION_NAME_MAX = 100;

const httpUrl = z
  .string()
  .trim()
  .refine((value) => {
    try {
      const url = new URL(value);
      return url.protocol === 'http:' || url.protocol === 'https:';
    } catch {
      return false;
    }
  }, 'must be an absolute http(s) URL');
const nonEmpty = z.string().trim().min(1, 'must not be empty');

interface TypeSpec {
  schema: z.ZodType<Record<string, unknown>>;
  /** Config fields that are credentials. */
  secrets: readonly string[];
  /**
   * Config fields that say where the credentials are sent. Changing one
   * needs every kept credential typed again (see checkRedirect).
   */
  destinations: readonly string[];
  description: string;
}

/**
 * Where a provider's requests go instead of its official host: a relay, a
 * self-hosted proxy, or a local server in tests. Still under the egress
 * policy; its path is a prefix of every provider path.
 */
const apiBaseUrl = httpUrl.optional();
const API_BASE_URL_HINT = 'optional `apiBaseUrl` (default: the official API host; reached through the egress policy)';

const emailSchema = z.strictObject({ apiKey: nonEmpty, fromEmail: z.email().optional(), fromName: z.string().optional(), apiBaseUrl });

export const INTEGRATION_TYPES = {
  webhook: {
    description:
      'Generic outgoing webhook: `url` (credential: webhook URLs often carry a token), optional `method`, `headers` (credential), `secret` (credential, HMAC-SHA256 signing key).',
    secrets: ['url', 'headers', 'secret'],
    destinations: ['url'],
    schema: z.strictObject({
      url: httpUrl,
      method: z.enum(['POST', 'PUT', 'PATCH']).optional(),
      headers: z.record(z.string(), z.string()).optional(),
      secret: z.string().optional(),
    }),
  },
  web3: {
    description: 'An on-chain address: `address` (returned EIP-55 checksummed), optional `chainId`.',
    secrets: [],
    destinations: [],
    schema: z.strictObject({
      address: z
        .string()
        .trim()
        .refine((a) => isAddress(a, { strict: false }), 'must be a 0x-prefixed 20-byte hex address'),
      chainId: z.number().int().positive().optional(),
    }),
  },
  'ai-gateway': {
    description: 'AI gateway: `apiKey` (credential), optional `baseUrl`, `defaultModel`.',
    secrets: ['apiKey'],
    destinations: ['baseUrl'],
    schema: z.strictObject({ apiKey: nonEmpty, baseUrl: httpUrl.optional(), defaultModel: z.string().optional() }),
  },
  discord: {
    description: `Discord channel webhook: \`webhookUrl\` (credential: the URL carries the token), ${API_BASE_URL_HINT}.`,
    secrets: ['webhookUrl'],
    destinations: ['apiBaseUrl'],
    schema: z.strictObject({ webhookUrl: httpUrl, apiBaseUrl }),
  },
  slack: {
    description: `Slack: \`webhookUrl\` (incoming webhook) and/or \`botToken\` (credentials; the bot token is used when set), optional \`channel\`, ${API_BASE_URL_HINT}.`,
    secrets: ['webhookUrl', 'botToken'],
    destinations: ['apiBaseUrl'],
    schema: z
      .strictObject({ webhookUrl: httpUrl.optional(), botToken: nonEmpty.optional(), channel: z.string().optional(), apiBaseUrl })
      .refine((c) => c.webhookUrl !== undefined || c.botToken !== undefined, { error: 'set webhookUrl or botToken' }),
  },
  telegram: {
    description: `Telegram bot: \`botToken\` (credential), optional \`chatId\`, ${API_BASE_URL_HINT}.`,
    secrets: ['botToken'],
    destinations: ['apiBaseUrl'],
    schema: z.strictObject({ botToken: nonEmpty, chatId: z.union([z.string(), z.number()]).optional(), apiBaseUrl }),
  },
  sendgrid: {
    description: `SendGrid e-mail: \`apiKey\` (credential), \`fromEmail\` (needed to send), optional \`fromName\`, ${API_BASE_URL_HINT}.`,
    secrets: ['apiKey'],
    destinations: ['apiBaseUrl'],
    schema: emailSchema,
  },
  resend: {
    description: `Resend e-mail: \`apiKey\` (credential), \`fromEmail\` (needed to send), optional \`fromName\`, ${API_BASE_URL_HINT}.`,
    secrets: ['apiKey'],
    destinations: ['apiBaseUrl'],
    schema: emailSchema,
  },
  safe: {
    description: `Safe (multisig) transaction service: \`apiKey\` (credential), optional \`chainId\`, \`safeAddress\`, ${API_BASE_URL_HINT}.`,
    secrets: ['apiKey'],
    destinations: ['apiBaseUrl'],
    schema: z.strictObject({
      apiKey: nonEmpty,
      apiBaseUrl,
      chainId: z.number().int().positive().optional(),
      safeAddress: z
        .string()
        .refine((a) => isAddress(a, { strict: false }), 'must be a 0x-prefixed 20-byte hex address')
        .optional(),
    }),
  },
  database: {
    description:
      'Database for the Database Query action: `driver` (`sqlite` | `postgres`); sqlite: `path` (a file inside the directory the operator allows, FLOWGATE_SQLITE_INTEGRATION_DIR; the driver is off without it), `allowWrites` (default false: read-only); postgres: `host`, `port`, `database`, `user`, `ssl`, `password` (credential) or `connectionString` (credential), reached through the egress policy (FLOWGATE_DATABASE_ALLOW_HOSTS).',
    secrets: ['password', 'connectionString'],
    destinations: ['host', 'port', 'connectionString'],
    schema: z
      .strictObject({
        driver: z.enum(['sqlite', 'postgres']),
        path: nonEmpty.optional(),
        allowWrites: z.boolean().optional(),
        host: nonEmpty.optional(),
        port: z.number().int().min(1).max(65535).optional(),
        database: z.string().optional(),
        user: z.string().optional(),
        ssl: z.boolean().optional(),
        password: z.string().optional(),
        connectionString: nonEmpty.optional(),
      })
      .superRefine((c, ctx) => {
        if (c.driver === 'sqlite' && !c.path) ctx.addIssue({ code: 'custom', path: ['path'], message: 'sqlite needs `path` (the database file)' });
        const connectionProblem = c.connectionString === undefined ? undefined : connectionStringProblem(c.connectionString);
        if (connectionProblem) ctx.addIssue({ code: 'custom', path: ['connectionString'], message: connectionProblem });
        if (c.driver === 'postgres' && !c.host && !c.connectionString) {
          ctx.addIssue({ code: 'custom', path: ['host'], message: 'postgres needs `host` or `connectionString`' });
        }
      }),
  },
} satisfies Record<string, TypeSpec>;

export type IntegrationType = keyof typeof INTEGRATION_TYPES;
export const INTEGRATION_TYPE_NAMES = Object.keys(INTEGRATION_TYPES) as IntegrationType[];

export interface IntegrationSummary {
  id: string;
  name: string;
  type: string;
  isManaged: boolean;
  address: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface IntegrationDetails extends IntegrationSummary {
  /** The non-credential config fields. */
  config: Record<string, unknown>;
  /** Names of the credential fields that are set (never their values). */
  configuredSecrets: string[];
}

type Row = Awaited<ReturnType<ReturnType<typeof selectIntegrations>['executeTakeFirstOrThrow']>>;
type Config = Record<string, unknown>;

function selectIntegrations(db: Store, organizationId: string) {
  return db.selectFrom('integrations').selectAll().where('organization_id', '=', organizationId);
}

function specOf(type: string): TypeSpec {
  const spec = (INTEGRATION_TYPES as Record<string, TypeSpec>)[type];
  if (spec) return spec;
  const guess = suggest(type, INTEGRATION_TYPE_NAMES);
  throw badRequest(
    'invalid_input',
    `Unknown integration type ${JSON.stringify(type)}.${guess ? ` Did you mean "${guess}"?` : ''} Valid types: ${INTEGRATION_TYPE_NAMES.join(', ')}.`,
    {
      issues: [{ path: 'type', message: 'unknown integration type', code: 'invalid_value' }],
      validTypes: INTEGRATION_TYPE_NAMES,
      ...(guess ? { suggestion: guess } : {}),
    },
  );
}

const aadOf = (id: string) => `integration:${id}`;

function addressOf(type: string, config: Config): string | null {
  if (type !== 'web3' || typeof config.address !== 'string') return null;
  try {
    return getAddress(config.address.toLowerCase());
  } catch {
    return null;
  }
}

const toSummary = (row: Row): IntegrationSummary => ({
  id: row.id,
  name: row.name,
  type: row.type,
  isManaged: row.is_managed === 1,
  address: addressOf(row.type, JSON.parse(row.config) as Config),
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

function openSecrets(services: Pick<Services, 'secrets'>, row: Row): Config {
  return JSON.parse(services.secrets.open(row.credentials_encrypted, aadOf(row.id))) as Config;
}

/**
 * Rows written before a field became a credential (a webhook's `url`) keep
 * it in the plain JSON until their next update: it is still never returned.
 */
function toDetails(services: Pick<Services, 'secrets'>, row: Row): IntegrationDetails {
  const secrets = specOf(row.type).secrets;
  const stored = JSON.parse(row.config) as Config;
  const config = Object.fromEntries(Object.entries(stored).filter(([key]) => !secrets.includes(key)));
  const configured = new Set([...Object.keys(openSecrets(services, row)), ...Object.keys(stored).filter((key) => secrets.includes(key))]);
  return { ...toSummary(row), config, configuredSecrets: [...configured].sort() };
}

/**
 * A sqlite database must be a file the gateway may open (SQLITE_PATH_UNAVAILABLE
 * otherwise, the same for every reason). Checked on create and update; the
 * runner checks again before every query.
 */
function checkDatabasePath(services: Pick<Services, 'config'>, type: string, config: Config): void {
  if (type !== 'database' || config.driver !== 'sqlite' || typeof config.path !== 'string') return;
  try {
    resolveSqlitePath(services.config.sqliteIntegrationDir, services.config.dataDir, config.path);
  } catch (error) {
    if (!(error instanceof SqliteGuardError)) throw error;
    throw new ServiceError(400, 'invalid_input', `Invalid database config: config.path: ${error.message}`, {
      issues: [{ path: 'config.path', message: error.message, code: 'custom' }],
    });
  }
}

/** Validates a full config for a type; issue messages never echo values. */
function validateConfig(type: string, config: Config): Config {
  const spec = specOf(type);
  const result = spec.schema.safeParse(config);
  if (result.success) return result.data;
  const issues = result.error.issues.map((issue) => ({
    path: ['config', ...issue.path.map(String)].join('.'),
    message: issue.message,
    code: issue.code,
  }));
  const fields = Object.keys((spec.schema as unknown as { shape?: Record<string, unknown> }).shape ?? {});
  throw new ServiceError(400, 'invalid_input', `Invalid ${type} config: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}. ${spec.description}`, {
    issues,
    ...(fields.length ? { configFields: fields } : {}),
  });
}

/** Splits a validated config into its stored JSON and its sealed credentials. */
function split(type: string, config: Config): { plain: Config; secret: Config } {
  const secrets = specOf(type).secrets;
  const plain: Config = {};
  const secret: Config = {};
  for (const [key, value] of Object.entries(config)) {
    if (value === undefined) continue;
    (secrets.includes(key) ? secret : plain)[key] = value;
  }
  if (type === 'web3' && typeof plain.address === 'string') plain.address = getAddress(plain.address.toLowerCase());
  return { plain, secret };
}

/** Empty credential values (omitted, null, '', {}) keep what is stored. */
const isEmptyValue = (value: unknown) =>
  value === undefined || value === null || value === '' || (typeof value === 'object' && !Array.isArray(value) && Object.keys(value as object).length === 0);

/**
 * Applies a patch: a credential field that is omitted or empty keeps its
 * stored value; a non-credential field set to null is removed.
 */
function applyPatch(type: string, current: Config, patch: Config): Config {
  const secrets = specOf(type).secrets;
  const next: Config = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (secrets.includes(key)) {
      if (!isEmptyValue(value)) next[key] = value;
    } else if (value === null) {
      delete next[key];
    } else if (value !== undefined) {
      next[key] = value;
    }
  }
  return next;
}

/**
 * Credentials are never returned, so a caller who may use an integration
 * (any `mcp:write` holder, a member) must not learn them by pointing it at a
 * host they control. Changing where the requests go (an `apiBaseUrl`, a
 * webhook `url`, a database `host`) therefore needs every credential that
 * stays set typed again in the same request, as only someone who has them can.
 */
function checkRedirect(type: string, current: Config, patch: Config, next: Config): void {
  const spec = specOf(type);
  const moved = spec.destinations.filter((key) => JSON.stringify(current[key] ?? null) !== JSON.stringify(next[key] ?? null));
  if (!moved.length) return;
  const missing = spec.secrets.filter((key) => next[key] !== undefined && isEmptyValue(patch[key]));
  if (!missing.length) return;
  const fields = (keys: readonly string[]) => keys.map((key) => `config.${key}`).join(', ');
  throw new ServiceError(
    400,
    'invalid_input',
    `Changing ${fields(moved)} sends this integration's stored credentials somewhere new, so it needs them typed again: add ${fields(missing)} to the same request (stored credentials are never returned, so only someone who has them can redirect them).`,
    { issues: missing.map((key) => ({ path: `config.${key}`, message: `required when ${fields(moved)} changes`, code: 'custom' })) },
  );
}

async function getRow(db: Store, organizationId: string, integrationId: string): Promise<Row> {
  const row = await selectIntegrations(db, organizationId).where('id', '=', integrationId).executeTakeFirst();
  if (!row) {
    throw notFound(`Integration ${JSON.stringify(integrationId)} not found in this organization. Call list_integrations for the integrations that exist.`, {
      integrationId,
    });
  }
  return row;
}

export async function listIntegrations(store: Store, organizationId: string, type?: string): Promise<IntegrationSummary[]> {
  if (type !== undefined) specOf(type);
  let query = selectIntegrations(store, organizationId);
  if (type !== undefined) query = query.where('type', '=', type);
  const rows = await query.orderBy('name').orderBy('id').execute();
  return rows.map(toSummary);
}

export async function getIntegration(
  services: Pick<Services, 'store' | 'secrets'>,
  organizationId: string,
  integrationId: string,
): Promise<IntegrationDetails> {
  return toDetails(services, await getRow(services.store, organizationId, integrationId));
}

export async function createIntegration(
  services: Pick<Services, 'store' | 'secrets' | 'config'>,
  input: {
    organizationId: string;
    name: string;
    type: string;
    config: Config;
    /** Integrations the organization may hold (config.quotas.integrations); unset: no bound. */ quota?: number;
  },
  alongside?: Alongside,
): Promise<IntegrationDetails> {
  const config = validateConfig(input.type, input.config);
  checkDatabasePath(services, input.type, config);
  const { plain, secret } = split(input.type, config);
  const id = newId();
  const now = nowIso();
  const row: Row = {
    id,
    organization_id: input.organizationId,
    name: input.name,
    type: input.type,
    is_managed: 0,
    config: JSON.stringify(plain),
    credentials_encrypted: services.secrets.seal(JSON.stringify(secret), aadOf(id)),
    created_at: now,
    updated_at: now,
  };
  await services.store.transaction().execute(async (trx) => {
    await assertRoom(trx, 'integrations', input.quota, input.organizationId);
    await trx.insertInto('integrations').values(row).execute();
    await alongside?.(trx, row);
  });
  return toDetails(services, row);
}

export async function updateIntegration(
  services: Pick<Services, 'store' | 'secrets' | 'config'>,
  organizationId: string,
  integrationId: string,
  patch: { name?: string; config?: Config },
  alongside?: Alongside,
): Promise<IntegrationDetails> {
  return services.store.transaction().execute(async (trx) => {
    const row = await getRow(trx, organizationId, integrationId);
    const set: Partial<Row> = { updated_at: nowIso() };
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.config !== undefined) {
      const current = { ...(JSON.parse(row.config) as Config), ...openSecrets(services, row) };
      const config = validateConfig(row.type, applyPatch(row.type, current, patch.config));
      checkRedirect(row.type, current, patch.config, config);
      checkDatabasePath(services, row.type, config);
      const { plain, secret } = split(row.type, config);
      set.config = JSON.stringify(plain);
      set.credentials_encrypted = services.secrets.seal(JSON.stringify(secret), aadOf(row.id));
    }
    await trx.updateTable('integrations').set(set).where('id', '=', integrationId).where('organization_id', '=', organizationId).execute();
    await alongside?.(trx, { ...row, ...set });
    return toDetails(services, { ...row, ...set });
  });
}

/** Deletes an integration; answers what it was. */
export async function deleteIntegration(store: Store, organizationId: string, integrationId: string, alongside?: Alongside): Promise<{ id: string }> {
  return store.transaction().execute(async (trx) => {
    const row = await getRow(trx, organizationId, integrationId);
    await trx.deleteFrom('integrations').where('id', '=', integrationId).where('organization_id', '=', organizationId).execute();
    await alongside?.(trx, row);
    return { id: integrationId };
  });
}

/** Written in the change's own transaction (the audit row): a credential never changes without it. */
export type Alongside = (db: Store, integration: { id: string; type: string; name: string }) => Promise<void>;

/**
 * For the engine (Database Query and other integration-backed runners): the
 * integration with its non-secret config and decrypted credentials merged.
 * Never return this to a caller. 404 for another organization's integration.
 */
export async function getIntegrationForRun(
  services: Pick<Services, 'store' | 'secrets'>,
  organizationId: string,
  integrationId: string,
): Promise<{ id: string; name: string; type: string; config: Record<string, unknown> }> {
  const row = await getRow(services.store, organizationId, integrationId);
  return { id: row.id, name: row.name, type: row.type, config: { ...(JSON.parse(row.config) as Config), ...openSecrets(services, row) } };
}

/**
 * For the live tester: the saved config with credentials merged and the
 * optional overrides applied (the saved row is not changed), validated as its
 * type requires, plus the credential values to scrub from any message.
 * Never return this to a caller.
 */
export async function integrationUnderTest(
  services: Pick<Services, 'store' | 'secrets'>,
  organizationId: string,
  integrationId: string,
  configOverrides?: Config,
): Promise<{ id: string; name: string; type: IntegrationType; config: Config; secrets: Config; address: string | null }> {
  const row = await getRow(services.store, organizationId, integrationId);
  const spec = specOf(row.type);
  const stored: Config = { ...(JSON.parse(row.config) as Config), ...openSecrets(services, row) };
  const config = validateConfig(row.type, configOverrides ? applyPatch(row.type, stored, configOverrides) : stored);
  if (configOverrides) checkRedirect(row.type, stored, configOverrides, config);
  const secrets = Object.fromEntries(spec.secrets.filter((k) => config[k] !== undefined).map((k) => [k, config[k]]));
  return { id: row.id, name: row.name, type: row.type as IntegrationType, config, secrets, address: addressOf(row.type, config) };
}
