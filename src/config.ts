import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { parseAllowHosts, type EgressAllowList } from './net/egress-policy.ts';
import { isInside, SQLITE_DIR_VARIABLE } from './org/sqlite-guard.ts';

/**
 * Typed gateway configuration, read once from the environment at start-up.
 * A bad value stops start-up with one line naming the variable (ConfigError).
 */

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`Invalid configuration: ${variable} ${detail}`);
    this.name = 'ConfigError';
  }
}

const decimalInteger = z.string().trim().regex(/^\d+$/, 'must be a non-negative whole number in decimal digits');
const positiveInt = decimalInteger.transform(Number).refine((n) => Number.isSafeInteger(n) && n > 0, 'must be a whole number greater than 0');
const onOff = z.enum(['on', 'off']);
const daysOrOff = z
  .string()
  .trim()
  .refine((v) => v === 'off' || (/^\d+$/.test(v) && Number(v) > 0 && Number(v) <= 36_500), 'must be a whole number of days from 1 to 36500, or off')
  .transform((v) => (v === 'off' ? undefined : Number(v)));
const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

/**
 * Each request-rate limit the gateway enforces, with its own variable; `byIp`
 * marks those counted per client address (an IPv6 client per /64). Only
 * enforced limits belong here: /openapi.json (`x-rate-limits`) and
 * /docs/limits are generated from this table. SPEC.md's sign-in and step-up
 * limits join it with the routes they guard.
 */
export const RATE_LIMIT_VARIABLES = {
  mcpPerOrganization: { variable: 'FLOWGATE_RATE_LIMIT_MCP_PER_ORG', default: 120, windowSeconds: 60, describes: 'MCP requests per organization per minute' },
  mcpPublicCallsPerIp: {
    byIp: true,
    variable: 'FLOWGATE_RATE_LIMIT_MCP_PUBLIC_CALLS_PER_IP',
    default: 10,
    windowSeconds: 60,
    describes: 'anonymous calls of listed workflows per IP per minute (MCP tools/call, and free runs over POST /api/mcp/workflows/{slug}/call)',
  },
  executePerKey: {
    variable: 'FLOWGATE_RATE_LIMIT_EXECUTE_PER_KEY',
    default: 60,
    windowSeconds: 60,
    describes: 'direct-execution requests per API key per minute',
  },
  restPerOrganization: {
    variable: 'FLOWGATE_RATE_LIMIT_REST_PER_ORG',
    default: 1200,
    windowSeconds: 60,
    describes:
      'REST API requests per organization per minute (any of its API keys, sessions or OAuth tokens; webhook calls are not counted), an answer counting one more for each 64 KiB it held',
  },
  restAnonymousPerIp: {
    byIp: true,
    variable: 'FLOWGATE_RATE_LIMIT_REST_ANONYMOUS_PER_IP',
    default: 600,
    windowSeconds: 60,
    describes:
      'REST API requests without a credential per IP per minute (public lists, discovery documents, sign-in; health checks are not counted), an answer counting one more for each 64 KiB it held',
  },
  objectWritesPerOrganization: {
    variable: 'FLOWGATE_RATE_LIMIT_OBJECT_WRITES_PER_ORG',
    default: 300,
    windowSeconds: 60,
    describes:
      'writes of stored objects (workflows, projects, tags, integrations, invitations, public tags, webhook keys: create, update, delete; member role changes and removals; organization switches, each also an audit row) per organization per minute',
  },
  anonymousWorkflowsPerIp: {
    byIp: true,
    variable: 'FLOWGATE_RATE_LIMIT_ANONYMOUS_WORKFLOWS_PER_IP',
    default: 20,
    windowSeconds: 3600,
    describes: 'anonymous (unclaimed) workflow creation attempts per IP per hour (a refused graph counts too)',
  },
  siweNoncePerIp: {
    byIp: true,
    variable: 'FLOWGATE_RATE_LIMIT_SIWE_NONCE_PER_IP',
    default: 20,
    windowSeconds: 3600,
    describes: 'wallet sign-in nonce requests per IP per hour',
  },
  siweVerifyPerIp: {
    byIp: true,
    variable: 'FLOWGATE_RATE_LIMIT_SIWE_VERIFY_PER_IP',
    default: 10,
    windowSeconds: 3600,
    describes: 'wallet sign-in verifications per IP per hour',
  },
  emailSignUpPerIp: {
    byIp: true,
    variable: 'FLOWGATE_RATE_LIMIT_EMAIL_SIGN_UP_PER_IP',
    default: 10,
    windowSeconds: 3600,
    describes: 'e-mail sign-ups per IP per hour',
  },
  emailSignUpPerAddress: {
    variable: 'FLOWGATE_RATE_LIMIT_EMAIL_SIGN_UP_PER_ADDRESS',
    default: 3,
    windowSeconds: 3600,
    describes: 'e-mail sign-ups (verification or notice mails) per e-mail address per hour',
  },
  emailSignInPerIp: {
    byIp: true,
    variable: 'FLOWGATE_RATE_LIMIT_EMAIL_SIGN_IN_PER_IP',
    default: 10,
    windowSeconds: 3600,
    describes: 'e-mail and password sign-in attempts per IP per hour',
  },
  emailLinkPerUser: {
    variable: 'FLOWGATE_RATE_LIMIT_EMAIL_LINK_PER_USER',
    default: 10,
    windowSeconds: 86_400,
    describes: 'address-confirmation mails (link_email, POST /api/user/email) per user per day, to any addresses',
  },
  stepUpPerUserAction: {
    // SPEC Authentication rule 8: a sliding window (a log of requests, src/guards/sliding-window.ts).
    sliding: true,
    variable: 'FLOWGATE_RATE_LIMIT_STEP_UP_PER_USER_ACTION',
    default: 10,
    windowSeconds: 900,
    describes:
      "requests to a step-up gated operation per user and action in any 15 minutes (a sliding window: the user's sessions together, each API key or OAuth token apart)",
  },
  oauthRegisterPerIp: {
    byIp: true,
    variable: 'FLOWGATE_RATE_LIMIT_OAUTH_REGISTER_PER_IP',
    default: 20,
    windowSeconds: 3600,
    describes: 'OAuth dynamic client registrations per IP per hour',
  },
  oauthTokenPerIp: {
    byIp: true,
    variable: 'FLOWGATE_RATE_LIMIT_OAUTH_TOKEN_PER_IP',
    default: 60,
    windowSeconds: 60,
    describes: 'OAuth token and revocation requests per IP per minute',
  },
  oauthAuthorizePerIp: {
    byIp: true,
    variable: 'FLOWGATE_RATE_LIMIT_OAUTH_AUTHORIZE_PER_IP',
    default: 60,
    windowSeconds: 3600,
    describes: 'OAuth authorization requests (/authorize, which may fetch a client_id metadata document) per IP per hour',
  },
  catalogEmailPerRecipient: {
    variable: 'FLOWGATE_RATE_LIMIT_CATALOG_EMAIL_PER_RECIPIENT',
    default: 5,
    windowSeconds: 86_400,
    describes: "e-mails the catalog's email-send listing (the operator's Resend account) sends to one address per day",
  },
  catalogEmailPerDay: {
    variable: 'FLOWGATE_RATE_LIMIT_CATALOG_EMAIL_PER_DAY',
    default: 500,
    windowSeconds: 86_400,
    describes: "e-mails the catalog's email-send listing sends in all per day",
  },
  explorerLookupsPerOrganization: {
    variable: 'FLOWGATE_RATE_LIMIT_EXPLORER_LOOKUPS_PER_ORG',
    default: 30,
    windowSeconds: 60,
    describes:
      "block-explorer ABI requests per organization per minute (the operator's explorer key is shared by every tenant; ABIs already in the cache are not counted)",
  },
} as const;

/**
 * How many of each stored object one organization may hold, with its own
 * variable. Creating one more is 409 `quota_exceeded` and writes nothing.
 * /docs/limits is generated from this table. Without these a single key could
 * fill the shared database, or the public tag list every client reads.
 */
export const QUOTA_VARIABLES = {
  workflows: {
    variable: 'FLOWGATE_MAX_WORKFLOWS_PER_ORG',
    noun: 'workflows',
    default: 10_000,
    describes: 'Workflows per organization (creating, duplicating or claiming one more is refused)',
    remedy: 'delete some (delete_workflow, DELETE /api/workflows/{id})',
  },
  projects: {
    variable: 'FLOWGATE_MAX_PROJECTS_PER_ORG',
    noun: 'projects',
    default: 1_000,
    describes: 'Projects per organization',
    remedy: 'delete one (delete_project, DELETE /api/projects/{projectId})',
  },
  tags: {
    variable: 'FLOWGATE_MAX_TAGS_PER_ORG',
    noun: 'tags',
    default: 1_000,
    describes: 'Tags per organization',
    remedy: 'delete one (delete_tag, DELETE /api/tags/{tagId})',
  },
  integrations: {
    variable: 'FLOWGATE_MAX_INTEGRATIONS_PER_ORG',
    noun: 'integrations',
    default: 500,
    describes: 'Integrations per organization',
    remedy: 'delete one (delete_integration, DELETE /api/integrations/{integrationId})',
  },
  apiKeys: {
    variable: 'FLOWGATE_MAX_API_KEYS_PER_ORG',
    noun: 'live organization API keys',
    default: 100,
    describes: 'Live (unrevoked) organization API keys (`svc_`) per organization',
    remedy: 'revoke one (revoke_api_key, DELETE /api/keys/{keyId})',
  },
  webhookKeys: {
    variable: 'FLOWGATE_MAX_WEBHOOK_KEYS_PER_ORG',
    noun: 'live webhook keys',
    default: 100,
    describes: 'Live webhook keys (`wfb_`) per organization',
    remedy: 'revoke one (DELETE /api/api-keys/{keyId})',
  },
  members: {
    variable: 'FLOWGATE_MAX_MEMBERS_PER_ORG',
    noun: 'members',
    default: 1_000,
    describes: 'Members per organization (inviting one more, or accepting an invitation, is refused)',
    remedy: 'an admin removes one (remove_member, DELETE /api/organization/members/{userId})',
  },
  pendingInvitations: {
    variable: 'FLOWGATE_MAX_PENDING_INVITATIONS_PER_ORG',
    noun: 'pending invitations',
    default: 200,
    describes: 'Pending invitations (neither accepted, revoked nor expired) per organization',
    remedy: 'revoke one (revoke_invitation, DELETE /api/organization/invitations/{invitationId}) or wait for one to expire',
  },
  publicWorkflows: {
    variable: 'FLOWGATE_MAX_PUBLIC_WORKFLOWS_PER_ORG',
    noun: 'public workflows',
    default: 50,
    describes:
      'Public workflows per organization (publishing one more, with go_live or visibility "public", is refused): every client reads them in GET /api/workflows/public',
    remedy: 'make one private (update_workflow with visibility "private", PATCH /api/workflows/{workflowId})',
  },
  listings: {
    variable: 'FLOWGATE_MAX_LISTINGS_PER_ORG',
    noun: 'listed workflows',
    default: 100,
    describes:
      'Listed (callable) workflows per organization (listing one more is refused; updating a listed one is not): each is an operation of every /openapi.json and an entry of GET /api/mcp/workflows',
    remedy: 'unlist one (unlist_workflow, DELETE /api/workflows/{workflowId}/listing)',
  },
  publicTags: {
    variable: 'FLOWGATE_MAX_PUBLIC_TAGS_PER_ORG',
    noun: 'public tags it created',
    default: 50,
    describes: 'Public tags an organization has created (they are shared by every organization and cannot be deleted)',
    remedy: 'use one that exists (list_public_tags, GET /api/public-tags)',
  },
} as const;

export type QuotaName = keyof typeof QUOTA_VARIABLES;

export type RateLimitName = keyof typeof RATE_LIMIT_VARIABLES;
export interface RateLimitSetting {
  limit: number;
  windowSeconds: number;
}

export const MAILER_PROVIDERS = ['resend', 'sendgrid'] as const;
export interface MailerConfig {
  provider: (typeof MAILER_PROVIDERS)[number];
  /** Never logged nor returned. */
  apiKey: string;
  from: string;
  /** The provider's API host (a relay or a test server); unset: the provider's own. */
  apiBaseUrl: string | undefined;
}

export const CAPTCHA_PROVIDERS = ['turnstile', 'hcaptcha', 'recaptcha'] as const;
export interface CaptchaConfig {
  provider: (typeof CAPTCHA_PROVIDERS)[number];
  /** Never logged nor returned. */
  secret: string;
  /** The siteverify URL; unset: the provider's own (src/auth/captcha.ts). */
  verifyUrl: string | undefined;
}

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** FLOWGATE_DATABASE_URL (postgres://…): the store is PostgreSQL; unset, SQLite in dataDir. Holds a password: never logged nor returned. */
  databaseUrl: string | undefined;
  baseUrl: string;
  /** RPC overrides by numeric chain id (FLOWGATE_RPC_URL_<chainId>). Never returned by any endpoint. */
  rpcUrls: Record<number, string>;
  /** Explorer API overrides by chain id (FLOWGATE_EXPLORER_API_URL_<chainId>). */
  explorerApiUrls: Record<number, string>;
  explorerApiKey: string | undefined;
  devnet: 'auto' | 'off';
  /** `flowgate serve` stops when its parent process exits (FLOWGATE_EXIT_WITH_PARENT). */
  exitWithParent: boolean;
  masterKey: string | undefined;
  spend: {
    dailyValueCapWei: bigint;
    dailySolanaValueCapLamports: bigint;
    /** The most an owner may set as a daily cap (organization-wide or per chain); default: the default cap, so raising needs the operator. */
    maxDailyValueCapWei: bigint;
    maxDailySolanaValueCapLamports: bigint;
    stablecoinCapMicroUsd: bigint;
  };
  /** How long a write waits for its receipt before `timeout` (fails closed; the hash stays on record). */
  receiptTimeoutMs: number;
  /**
   * Which proxies in front of the gateway are believed about the client's address (X-Forwarded-For), in
   * express's `trust proxy` form: false (none: the socket's address), a hop count, or addresses and ranges.
   */
  trustProxy: false | number | string[];
  /** How many of each stored object one organization may hold (QUOTA_VARIABLES); one more is 409 quota_exceeded. */
  quotas: Record<QuotaName, number>;
  /** Server-sent-event streams (the analytics stream) one organization may hold open on this process at once. */
  maxEventStreamsPerOrg: number;
  /** Days audit rows are kept; undefined: forever. */
  auditLogRetentionDays: number | undefined;
  /** Days an anonymous workflow nobody claimed is kept (FLOWGATE_ANONYMOUS_WORKFLOW_RETENTION_DAYS); undefined: forever. */
  anonymousWorkflowRetentionDays: number | undefined;
  /** Anonymous workflows nobody claimed the whole deployment holds at most (FLOWGATE_MAX_UNCLAIMED_WORKFLOWS); one more is 429. */
  maxUnclaimedWorkflows: number;
  rateLimitsEnabled: boolean;
  rateLimits: Record<RateLimitName, RateLimitSetting>;
  bodyLimitBytes: number;
  /** Operator exceptions to the outbound-HTTP egress policy (FLOWGATE_HTTP_ALLOW_HOSTS). */
  httpAllowHosts: EgressAllowList;
  /** Outbound requests made on tenants' behalf that one process keeps open at once, in all and per organization (src/net/egress-slots.ts). */
  httpConcurrency: { total: number; perOrganization: number };
  /** Operator exceptions to the egress policy for PostgreSQL integrations (FLOWGATE_DATABASE_ALLOW_HOSTS). */
  databaseAllowHosts: EgressAllowList;
  /** The only directory SQLite integrations may open files in (real path); unset: the sqlite driver is off. */
  sqliteIntegrationDir: string | undefined;
  engine: {
    /** Executions run at once by this process. */
    concurrency: number;
    /** Of those, at most this many for one organization, so others always find a slot (default: half, rounded up). */
    concurrencyPerOrg: number;
    /** Runs one organization may have waiting for a slot; the next is refused with 429 until some have run. */
    maxQueuedPerOrg: number;
    /** Run data (JSON characters of step inputs and outputs, and each run's copy of its graph and input) one organization's runs may write per UTC day. */
    runDataPerOrgPerDayBytes: number;
    /** Triggered runs one organization may have written skipped (past the two bounds above) per UTC day; later skipped occurrences leave no row. */
    maxSkippedRunsPerOrgPerDay: number;
    /** Days a finished run keeps its data (step logs, input, output, graph copy); its record stays. Undefined: forever. */
    runDataRetentionDays: number | undefined;
    /** A claimed run's lease; a run whose worker stops heart-beating for this long is reaped to system_error. */
    leaseMs: number;
    schedulerTickMs: number;
    /** How often chains with Event, Block or Transfer triggers are polled. */
    chainTriggerPollMs: number;
    /** How often `wait` re-reads a run it has not heard end (a fallback: completions wake it at once, from any instance). */
    waitRecheckMs: number;
    /** The JSON one run's steps may hold and log in all, inputs and outputs (src/engine/run-data-limit.ts). */
    runDataLimitBytes: number;
  };
  /** Shared secret other services of this deployment present as X-Internal-Service-Token; unset disables internal routes. */
  internalServiceSecret: string | undefined;
  /** Extra Host header values accepted when bound to a loopback address (DNS-rebinding protection). */
  allowedHosts: string[];
  /** Browser origins (besides the base URL's) allowed on /mcp and in CORS answers of authenticated routes (FLOWGATE_ALLOWED_ORIGINS). */
  allowedOrigins: string[];
  /** Domain of the synthetic e-mail of wallet accounts, `<address>@<domain>` (never delivered to). */
  walletEmailDomain: string;
  /** The deployment's own mail (verification links, sign-in notices, step-up codes); unset: e-mail sign-up is off. */
  mailer: MailerConfig | undefined;
  /** The CAPTCHA that gates e-mail sign-up; unset (the default): no CAPTCHA. */
  captcha: CaptchaConfig | undefined;
  /** Time a client has to send a whole request, headers and body; then 408 and the socket is closed. */
  requestTimeoutMs: number;
  /** On SIGTERM/SIGINT, how long requests in flight may take to finish before their connections are closed. */
  shutdownGraceMs: number;
  /** ERC-8004 identity of this deployment (FLOWGATE_AGENT_ID + FLOWGATE_AGENT_REGISTRY); unset: no registration document. */
  agentRegistration: { agentId: string; agentRegistry: string } | undefined;
  /**
   * The Resend account the catalog's `email-send` listing sends through
   * (FLOWGATE_CATALOG_RESEND_API_KEY, FLOWGATE_CATALOG_EMAIL_FROM, optional
   * FLOWGATE_CATALOG_RESEND_API_BASE_URL); unset: that listing's runs fail naming the missing integration.
   */
  catalogEmail: { apiKey: string; fromEmail: string; apiBaseUrl: string | undefined } | undefined;
  /** Paid workflow calls; unset values are defaulted in src/payments/settings.ts (devnet or Base USDC). */
  payments: {
    chainId: number | undefined;
    token: `0x${string}` | undefined;
    /** An http(s) facilitator URL, or `local` for the in-process facilitator. */
    facilitatorUrl: string | undefined;
    /** Gas-paying key of the in-process facilitator (hex); derived from the master key when unset. */
    facilitatorKey: `0x${string}` | undefined;
    /** How long a paid call waits for its settlement's transaction before answering `awaiting_payment`. */
    confirmationMs: number;
  };
}

function read<T>(env: NodeJS.ProcessEnv, variable: string, schema: z.ZodType<T>, fallback: string): T {
  const raw = env[variable];
  const value = raw === undefined || raw === '' ? fallback : raw;
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const reason = parsed.error.issues[0]?.message ?? 'is invalid';
    throw new ConfigError(variable, `${reason.replace(/^Invalid input: /, '')} (got ${JSON.stringify(value)})`);
  }
  return parsed.data;
}

/** The range names express (proxy-addr) knows, besides addresses and CIDR ranges. */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** `a.b.c.d`, an IPv6 address, or either with a /prefix (or an IPv4 netmask), as proxy-addr reads them. */
function isProxyAddress(entry: string): boolean {
  if (PROXY_RANGE_NAMES.has(entry)) return true;
  const [address, prefix, ...rest] = entry.split('/');
  const family = net.isIP(address ?? '');
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  // A netmask must be contiguous ones then zeros (proxy-addr refuses any other at start, in its own words).
  if (family === 4 && net.isIPv4(prefix))
    return /^1*0*$/.test(
      prefix
        .split('.')
        .map((octet) => Number(octet).toString(2).padStart(8, '0'))
        .join(''),
    );
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/**
 * FLOWGATE_TRUST_PROXY: off by default, so X-Forwarded-For, which any client can write, never picks the
 * address per-IP limits count against. Behind a balancer every client would otherwise share its one address
 * (and so one budget). `true` is refused: believing every hop lets a client name its own address.
 */
function trustProxy(env: NodeJS.ProcessEnv): Config['trustProxy'] {
  const variable = 'FLOWGATE_TRUST_PROXY';
  const raw = (env[variable] ?? '').trim();
  if (raw === '' || raw === 'off' || raw === 'false') return false;
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw);
    if (hops >= 1 && hops <= 10) return hops;
    throw new ConfigError(variable, `a hop count must be 1-10: the number of proxies in front of the gateway (got ${JSON.stringify(raw)})`);
  }
  if (raw === 'true' || raw === 'on' || raw === '*')
    throw new ConfigError(
      variable,
      `must name which proxies to believe (got ${JSON.stringify(raw)}): believing every hop lets any client choose the address its rate limits count against. Give the number of proxies in front of the gateway (e.g. 1) or their addresses (e.g. 10.0.0.0/8, or loopback)`,
    );
  const entries = raw.split(',').map((entry) => entry.trim());
  const bad = entries.find((entry) => !isProxyAddress(entry));
  if (bad !== undefined)
    throw new ConfigError(
      variable,
      `${JSON.stringify(bad)} is not an IP address, a CIDR range or one of loopback, linklocal, uniquelocal (got ${JSON.stringify(raw)}); or give a hop count (e.g. 1)`,
    );
  return entries;
}

function perChain(env: NodeJS.ProcessEnv, prefix: string): Record<number, string> {
  const out: Record<number, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith(prefix) || value === undefined || value === '') continue;
    const suffix = name.slice(prefix.length);
    if (!/^\d+$/.test(suffix)) throw new ConfigError(name, `must end in a numeric chain id (e.g. ${prefix}8453)`);
    out[Number(suffix)] = read(env, name, httpUrl, value);
  }
  return out;
}

/** Both ERC-8004 variables or neither: half an identity would publish a registration nobody can verify. */
function agentRegistration(env: NodeJS.ProcessEnv): Config['agentRegistration'] {
  const id = env.FLOWGATE_AGENT_ID || undefined;
  const registry = env.FLOWGATE_AGENT_REGISTRY || undefined;
  if (id === undefined && registry === undefined) return undefined;
  if (id === undefined) throw new ConfigError('FLOWGATE_AGENT_ID', 'must be set when FLOWGATE_AGENT_REGISTRY is (the ERC-8004 agent id, a decimal token id)');
  if (registry === undefined)
    throw new ConfigError('FLOWGATE_AGENT_REGISTRY', 'must be set when FLOWGATE_AGENT_ID is (eip155:<chainId>:<identity registry address>)');
  return {
    agentId: read(
      env,
      'FLOWGATE_AGENT_ID',
      decimalInteger.refine((v) => Number.isSafeInteger(Number(v)), 'must be at most 2^53-1'),
      '',
    ),
    agentRegistry: read(
      env,
      'FLOWGATE_AGENT_REGISTRY',
      z
        .string()
        .trim()
        .regex(/^eip155:\d+:0x[0-9a-fA-F]{40}$/, 'must be eip155:<chainId>:<0x registry address>'),
      '',
    ),
  };
}

/** FLOWGATE_ALLOWED_ORIGINS: comma-separated http(s) origins (scheme, host, optional port; no path), normalized as browsers send them. */
function allowedOrigins(value: string | undefined): string[] {
  const origins = (value ?? '')
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
  return origins.map((entry) => {
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    if (!url || !/^https?:$/.test(url.protocol) || url.pathname !== '/' || url.search || url.hash || url.username) {
      throw new ConfigError(
        'FLOWGATE_ALLOWED_ORIGINS',
        `must be comma-separated http(s) origins such as https://app.example.com or http://localhost:5173, without a path (got ${JSON.stringify(entry)})`,
      );
    }
    return url.origin;
  });
}

function catalogEmail(env: NodeJS.ProcessEnv): Config['catalogEmail'] {
  const apiKey = env.FLOWGATE_CATALOG_RESEND_API_KEY?.trim();
  if (!apiKey) return undefined;
  return {
    apiKey,
    fromEmail: read(env, 'FLOWGATE_CATALOG_EMAIL_FROM', z.email('must be the sender e-mail address when FLOWGATE_CATALOG_RESEND_API_KEY is set'), ''),
    apiBaseUrl: env.FLOWGATE_CATALOG_RESEND_API_BASE_URL ? read(env, 'FLOWGATE_CATALOG_RESEND_API_BASE_URL', httpUrl, '') : undefined,
  };
}

function allowHosts(env: NodeJS.ProcessEnv, variable: string): EgressAllowList {
  try {
    return parseAllowHosts(env[variable]);
  } catch (error) {
    throw new ConfigError(variable, (error as Error).message);
  }
}

/**
 * FLOWGATE_SQLITE_INTEGRATION_DIR as its real path: an existing directory
 * that is not the data directory nor inside it (the gateway's own database
 * must never be reachable from an integration).
 */
/** Checked without echoing the value: the URL carries the database password. */
function databaseUrl(env: NodeJS.ProcessEnv): string | undefined {
  const raw = env.FLOWGATE_DATABASE_URL?.trim();
  if (!raw) return undefined;
  if (!/^postgres(ql)?:\/\/\S+$/.test(raw))
    throw new ConfigError('FLOWGATE_DATABASE_URL', 'must be a postgres:// or postgresql:// URL (value not shown: it may hold a password)');
  return raw;
}

function sqliteIntegrationDir(env: NodeJS.ProcessEnv, dataDir: string): string | undefined {
  const variable = SQLITE_DIR_VARIABLE;
  const raw = env[variable]?.trim();
  if (!raw) return undefined;
  let real: string;
  try {
    real = fs.realpathSync(path.resolve(raw));
    if (!fs.statSync(real).isDirectory()) throw new Error('not a directory');
  } catch {
    throw new ConfigError(variable, `must be an existing directory (got ${JSON.stringify(raw)})`);
  }
  let realData = dataDir;
  try {
    realData = fs.realpathSync(dataDir);
  } catch {
    // The data directory is created later; compare its resolved path.
  }
  if (isInside(real, realData)) throw new ConfigError(variable, `must not be the data directory or inside it (got ${JSON.stringify(raw)})`);
  return real;
}

/** Default daily caps and the deployment maximum an owner may set; a maximum below its default would make the default unreachable. */
function spendCaps(env: NodeJS.ProcessEnv) {
  const wei = read(env, 'EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI', decimalInteger.transform(BigInt), '20000000000000000');
  const lamports = read(env, 'EXECUTE_DEFAULT_DAILY_SOLANA_VALUE_CAP_LAMPORTS', decimalInteger.transform(BigInt), '500000000');
  const maxWei = read(env, 'FLOWGATE_MAX_DAILY_VALUE_CAP_WEI', decimalInteger.transform(BigInt), wei.toString());
  const maxLamports = read(env, 'FLOWGATE_MAX_DAILY_SOLANA_VALUE_CAP_LAMPORTS', decimalInteger.transform(BigInt), lamports.toString());
  if (maxWei < wei) throw new ConfigError('FLOWGATE_MAX_DAILY_VALUE_CAP_WEI', `must be at least EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI (${wei})`);
  if (maxLamports < lamports) {
    throw new ConfigError('FLOWGATE_MAX_DAILY_SOLANA_VALUE_CAP_LAMPORTS', `must be at least EXECUTE_DEFAULT_DAILY_SOLANA_VALUE_CAP_LAMPORTS (${lamports})`);
  }
  return { dailyValueCapWei: wei, dailySolanaValueCapLamports: lamports, maxDailyValueCapWei: maxWei, maxDailySolanaValueCapLamports: maxLamports };
}

/**
 * Caps on open outbound requests: the per-organization one must stay below the process's, so one organization at its
 * cap always leaves slots for the others.
 */
function httpConcurrency(env: NodeJS.ProcessEnv): Config['httpConcurrency'] {
  const total = read(
    env,
    'FLOWGATE_HTTP_CONCURRENCY',
    positiveInt.refine((n) => n >= 2, 'must be at least 2'),
    '1024',
  );
  const perOrganization = read(env, 'FLOWGATE_HTTP_CONCURRENCY_PER_ORG', positiveInt, String(Math.min(256, Math.max(1, Math.floor(total / 4)))));
  if (perOrganization >= total) {
    throw new ConfigError(
      'FLOWGATE_HTTP_CONCURRENCY_PER_ORG',
      `must be below FLOWGATE_HTTP_CONCURRENCY (${total}), so one organization cannot hold every slot`,
    );
  }
  return { total, perOrganization };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = read(
    env,
    'PORT',
    decimalInteger.transform(Number).refine((n) => n <= 65535, 'must be a port number 0-65535'),
    '3000',
  );
  const host = read(env, 'HOST', z.string().trim().min(1, 'must not be empty'), '127.0.0.1');
  const dataDir = path.resolve(read(env, 'FLOWGATE_DATA_DIR', z.string().trim().min(1), './data'));
  const baseUrl = read(env, 'FLOWGATE_BASE_URL', httpUrl, defaultBaseUrl(host, port)).replace(/\/+$/, '');
  const masterKey = env.FLOWGATE_MASTER_KEY
    ? read(env, 'FLOWGATE_MASTER_KEY', z.string().regex(/^(0x)?[0-9a-fA-F]{64}$/, 'must be 32 bytes as 64 hex characters'), '')
    : undefined;

  // A slot is held for a run's whole life, its waits on receipts and HTTP included; 64 (32 per organization)
  // keeps a process busy where 8 left it idle behind four runs waiting on a chain (README, issue 18's twelfth pass).
  const concurrency = read(env, 'FLOWGATE_ENGINE_CONCURRENCY', positiveInt, '64');
  const rateLimits = {} as Record<RateLimitName, RateLimitSetting>;
  for (const [name, spec] of Object.entries(RATE_LIMIT_VARIABLES) as [RateLimitName, (typeof RATE_LIMIT_VARIABLES)[RateLimitName]][]) {
    rateLimits[name] = { limit: read(env, spec.variable, positiveInt, String(spec.default)), windowSeconds: spec.windowSeconds };
  }

  return {
    port,
    host,
    dataDir,
    databaseUrl: databaseUrl(env),
    baseUrl,
    rpcUrls: perChain(env, 'FLOWGATE_RPC_URL_'),
    explorerApiUrls: perChain(env, 'FLOWGATE_EXPLORER_API_URL_'),
    explorerApiKey: env.FLOWGATE_EXPLORER_API_KEY || undefined,
    devnet: read(env, 'FLOWGATE_DEVNET', z.enum(['auto', 'off']), 'auto'),
    exitWithParent: read(env, 'FLOWGATE_EXIT_WITH_PARENT', z.enum(['on', 'off']), 'on') === 'on',
    masterKey,
    spend: {
      ...spendCaps(env),
      stablecoinCapMicroUsd: read(env, 'EXECUTE_DEFAULT_STABLECOIN_CAP_MICRO_USD', decimalInteger.transform(BigInt), '100000000'),
    },
    receiptTimeoutMs: read(env, 'FLOWGATE_RECEIPT_TIMEOUT_MS', positiveInt, '60000'),
    trustProxy: trustProxy(env),
    quotas: Object.fromEntries(
      Object.entries(QUOTA_VARIABLES).map(([name, spec]) => [name, read(env, spec.variable, positiveInt, String(spec.default))]),
    ) as Record<QuotaName, number>,
    maxEventStreamsPerOrg: read(env, 'FLOWGATE_MAX_EVENT_STREAMS_PER_ORG', positiveInt, '20'),
    auditLogRetentionDays: read(env, 'FLOWGATE_AUDIT_LOG_RETENTION_DAYS', daysOrOff, '365'),
    anonymousWorkflowRetentionDays: read(env, 'FLOWGATE_ANONYMOUS_WORKFLOW_RETENTION_DAYS', daysOrOff, '7'),
    maxUnclaimedWorkflows: read(env, 'FLOWGATE_MAX_UNCLAIMED_WORKFLOWS', positiveInt, '10000'),
    rateLimitsEnabled: read(env, 'FLOWGATE_RATE_LIMITS', onOff, 'on') === 'on',
    rateLimits,
    httpAllowHosts: allowHosts(env, 'FLOWGATE_HTTP_ALLOW_HOSTS'),
    httpConcurrency: httpConcurrency(env),
    databaseAllowHosts: allowHosts(env, 'FLOWGATE_DATABASE_ALLOW_HOSTS'),
    catalogEmail: catalogEmail(env),
    sqliteIntegrationDir: sqliteIntegrationDir(env, dataDir),
    engine: {
      concurrency,
      concurrencyPerOrg: read(env, 'FLOWGATE_ENGINE_CONCURRENCY_PER_ORG', positiveInt, String(Math.ceil(concurrency / 2))),
      maxQueuedPerOrg: read(env, 'FLOWGATE_ENGINE_MAX_QUEUED_PER_ORG', positiveInt, '10000'),
      runDataPerOrgPerDayBytes: read(
        env,
        'FLOWGATE_RUN_DATA_PER_ORG_PER_DAY_BYTES',
        positiveInt.refine((n) => n >= 1_048_576, 'must be at least 1048576 (1 MiB)'),
        '2147483648',
      ),
      maxSkippedRunsPerOrgPerDay: read(env, 'FLOWGATE_MAX_SKIPPED_RUNS_PER_ORG_PER_DAY', positiveInt, '1000'),
      runDataRetentionDays: read(env, 'FLOWGATE_RUN_DATA_RETENTION_DAYS', daysOrOff, '30'),
      leaseMs: read(
        env,
        'FLOWGATE_ENGINE_LEASE_MS',
        positiveInt.refine((n) => n >= 1000, 'must be at least 1000'),
        '30000',
      ),
      schedulerTickMs: read(
        env,
        'FLOWGATE_SCHEDULER_TICK_MS',
        positiveInt.refine((n) => n >= 100, 'must be at least 100'),
        '1000',
      ),
      chainTriggerPollMs: read(
        env,
        'FLOWGATE_CHAIN_TRIGGER_POLL_MS',
        positiveInt.refine((n) => n >= 100, 'must be at least 100'),
        '2000',
      ),
      waitRecheckMs: read(
        env,
        'FLOWGATE_WAIT_RECHECK_MS',
        positiveInt.refine((n) => n >= 100, 'must be at least 100'),
        '2000',
      ),
      runDataLimitBytes: read(
        env,
        'FLOWGATE_RUN_DATA_LIMIT_BYTES',
        positiveInt.refine((n) => n >= 64 * 1024, 'must be at least 65536'),
        String(16 * 1024 * 1024),
      ),
    },
    internalServiceSecret: env.FLOWGATE_INTERNAL_SERVICE_SECRET
      ? read(env, 'FLOWGATE_INTERNAL_SERVICE_SECRET', z.string().min(32, 'must be at least 32 characters'), '')
      : undefined,
    bodyLimitBytes: read(env, 'FLOWGATE_BODY_LIMIT_BYTES', positiveInt, String(1024 * 1024)),
    payments: {
      chainId: env.FLOWGATE_PAYMENT_CHAIN_ID ? read(env, 'FLOWGATE_PAYMENT_CHAIN_ID', positiveInt, '') : undefined,
      token: env.FLOWGATE_PAYMENT_TOKEN
        ? (read(
            env,
            'FLOWGATE_PAYMENT_TOKEN',
            z
              .string()
              .trim()
              .regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x token address'),
            '',
          ) as `0x${string}`)
        : undefined,
      facilitatorUrl: env.FLOWGATE_FACILITATOR_URL
        ? read(env, 'FLOWGATE_FACILITATOR_URL', z.union([z.literal('local'), httpUrl], { error: 'must be an http(s) URL or "local"' }), '')
        : undefined,
      facilitatorKey: env.FLOWGATE_FACILITATOR_PRIVATE_KEY
        ? (read(
            env,
            'FLOWGATE_FACILITATOR_PRIVATE_KEY',
            z
              .string()
              .trim()
              .regex(/^0x[0-9a-fA-F]{64}$/, 'must be a 0x-prefixed 32-byte hex private key'),
            '',
          ) as `0x${string}`)
        : undefined,
      confirmationMs: read(env, 'FLOWGATE_PAYMENT_CONFIRMATION_MS', positiveInt, '180000'),
    },
    allowedHosts: read(env, 'FLOWGATE_ALLOWED_HOSTS', z.string(), '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
    allowedOrigins: allowedOrigins(env.FLOWGATE_ALLOWED_ORIGINS),
    requestTimeoutMs: read(
      env,
      'FLOWGATE_REQUEST_TIMEOUT_MS',
      positiveInt.refine((n) => n >= 100, 'must be at least 100'),
      '10000',
    ),
    shutdownGraceMs: read(env, 'FLOWGATE_SHUTDOWN_GRACE_MS', decimalInteger.transform(Number).refine(Number.isSafeInteger, 'is too large'), '20000'),
    walletEmailDomain: read(
      env,
      'FLOWGATE_WALLET_EMAIL_DOMAIN',
      z
        .string()
        .trim()
        .toLowerCase()
        .regex(/^[a-z0-9-]+(\.[a-z0-9-]+)+$/, 'must be a domain name such as wallet.example.invalid'),
      'wallet.flowgate.invalid',
    ),
    agentRegistration: agentRegistration(env),
    mailer: mailerConfig(env),
    captcha: captchaConfig(env),
  };
}

/** FLOWGATE_EMAIL_*: all of provider, key and sender, or none. */
function mailerConfig(env: NodeJS.ProcessEnv): MailerConfig | undefined {
  if (!env.FLOWGATE_EMAIL_PROVIDER) {
    for (const variable of ['FLOWGATE_EMAIL_API_KEY', 'FLOWGATE_EMAIL_FROM', 'FLOWGATE_EMAIL_API_BASE_URL']) {
      if (env[variable]) throw new ConfigError(variable, 'is set but FLOWGATE_EMAIL_PROVIDER is not (resend or sendgrid)');
    }
    return undefined;
  }
  const required = (variable: string, what: string) => {
    if (!env[variable]?.trim()) throw new ConfigError(variable, `is required when FLOWGATE_EMAIL_PROVIDER is set (${what})`);
  };
  required('FLOWGATE_EMAIL_API_KEY', "the provider's API key");
  required('FLOWGATE_EMAIL_FROM', 'the sender address, e.g. no-reply@example.com');
  return {
    provider: read(env, 'FLOWGATE_EMAIL_PROVIDER', z.enum(MAILER_PROVIDERS, { error: 'must be resend or sendgrid' }), ''),
    apiKey: env.FLOWGATE_EMAIL_API_KEY!.trim(),
    from: read(env, 'FLOWGATE_EMAIL_FROM', z.email({ error: 'must be an e-mail address' }), ''),
    apiBaseUrl: env.FLOWGATE_EMAIL_API_BASE_URL ? read(env, 'FLOWGATE_EMAIL_API_BASE_URL', httpUrl, '') : undefined,
  };
}

/** FLOWGATE_CAPTCHA_*: off unless a provider is named; then its secret is required. */
function captchaConfig(env: NodeJS.ProcessEnv): CaptchaConfig | undefined {
  if (!env.FLOWGATE_CAPTCHA_PROVIDER) {
    for (const variable of ['FLOWGATE_CAPTCHA_SECRET', 'FLOWGATE_CAPTCHA_VERIFY_URL']) {
      if (env[variable]) throw new ConfigError(variable, 'is set but FLOWGATE_CAPTCHA_PROVIDER is not (turnstile, hcaptcha or recaptcha)');
    }
    return undefined;
  }
  if (!env.FLOWGATE_CAPTCHA_SECRET?.trim())
    throw new ConfigError('FLOWGATE_CAPTCHA_SECRET', "is required when FLOWGATE_CAPTCHA_PROVIDER is set (the provider's secret key)");
  return {
    provider: read(env, 'FLOWGATE_CAPTCHA_PROVIDER', z.enum(CAPTCHA_PROVIDERS, { error: 'must be turnstile, hcaptcha or recaptcha' }), ''),
    secret: env.FLOWGATE_CAPTCHA_SECRET.trim(),
    verifyUrl: env.FLOWGATE_CAPTCHA_VERIFY_URL ? read(env, 'FLOWGATE_CAPTCHA_VERIFY_URL', httpUrl, '') : undefined,
  };
}

/**
 * The base URL printed and put in documents when FLOWGATE_BASE_URL is unset:
 * the host the gateway listens on, so a LAN bind prints a URL that reaches it.
 * Loopback and wildcard binds are reached locally as `localhost`.
 */
export function defaultBaseUrl(host: string, port: number): string {
  const bare = host.replace(/^\[|\]$/g, '');
  const local = isLoopbackHost(host) || bare === '0.0.0.0' || bare === '::';
  const name = local ? 'localhost' : bare.includes(':') ? `[${bare}]` : bare;
  return `http://${name}:${port}`;
}

/** True when HOST is a loopback bind, where DNS-rebinding protection applies. */
export const isLoopbackHost = (host: string) => ['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host.toLowerCase());
