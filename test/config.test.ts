import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';

const base = { FLOWGATE_DATA_DIR: '/tmp/flowgate-config-test' };

function errorFor(env: Record<string, string>): string {
  try {
    loadConfig({ ...base, ...env });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error(`expected ${JSON.stringify(env)} to be refused`);
}

describe('configuration', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config.port).toBe(3000);
    expect(config.host).toBe('127.0.0.1');
    expect(config.dataDir).toMatch(/\/data$/);
    expect(config.baseUrl).toBe('http://localhost:3000');
    expect(config.devnet).toBe('auto');
    expect(config.rateLimitsEnabled).toBe(true);
    expect(config.rateLimits.mcpPerOrganization).toEqual({ limit: 120, windowSeconds: 60 });
    expect(config.rateLimits.mcpPublicCallsPerIp).toEqual({ limit: 10, windowSeconds: 60 });
    expect(config.rateLimits.executePerKey).toEqual({ limit: 60, windowSeconds: 60 });
    expect(config.spend.dailyValueCapWei).toBe(20_000_000_000_000_000n);
    expect(config.spend.dailySolanaValueCapLamports).toBe(500_000_000n);
    expect(config.spend.stablecoinCapMicroUsd).toBe(100_000_000n);
    expect(config.engine.runDataLimitBytes).toBe(16 * 1024 * 1024);
  });

  it("a run's data limit is read as given, and one too small to hold a run's own rows is refused by name", () => {
    expect(loadConfig({ FLOWGATE_RUN_DATA_LIMIT_BYTES: '1048576' }).engine.runDataLimitBytes).toBe(1_048_576);
    expect(errorFor({ FLOWGATE_RUN_DATA_LIMIT_BYTES: '1000' })).toMatch(/FLOWGATE_RUN_DATA_LIMIT_BYTES.*must be at least 65536/);
    expect(errorFor({ FLOWGATE_RUN_DATA_LIMIT_BYTES: 'lots' })).toContain('FLOWGATE_RUN_DATA_LIMIT_BYTES');
  });

  it("an organization's bound of waiting runs defaults to 10,000 and refuses what is not a positive whole number, by name", () => {
    expect(loadConfig({}).engine.maxQueuedPerOrg).toBe(10_000);
    expect(loadConfig({ FLOWGATE_ENGINE_MAX_QUEUED_PER_ORG: '50' }).engine.maxQueuedPerOrg).toBe(50);
    expect(errorFor({ FLOWGATE_ENGINE_MAX_QUEUED_PER_ORG: '0' })).toContain('FLOWGATE_ENGINE_MAX_QUEUED_PER_ORG');
    expect(errorFor({ FLOWGATE_ENGINE_MAX_QUEUED_PER_ORG: 'many' })).toContain('FLOWGATE_ENGINE_MAX_QUEUED_PER_ORG');
  });

  it('caps open outbound requests at 1,024 a process and 256 an organization by default, and refuses an organization cap that is not below the process cap, by name', () => {
    expect(loadConfig({}).httpConcurrency).toEqual({ total: 1024, perOrganization: 256 });
    // A lower process cap alone lowers the organization's default to a quarter of it.
    expect(loadConfig({ FLOWGATE_HTTP_CONCURRENCY: '100' }).httpConcurrency).toEqual({ total: 100, perOrganization: 25 });
    expect(loadConfig({ FLOWGATE_HTTP_CONCURRENCY: '4', FLOWGATE_HTTP_CONCURRENCY_PER_ORG: '3' }).httpConcurrency).toEqual({ total: 4, perOrganization: 3 });
    expect(errorFor({ FLOWGATE_HTTP_CONCURRENCY: '10', FLOWGATE_HTTP_CONCURRENCY_PER_ORG: '10' })).toMatch(
      /FLOWGATE_HTTP_CONCURRENCY_PER_ORG must be below FLOWGATE_HTTP_CONCURRENCY \(10\)/,
    );
    expect(errorFor({ FLOWGATE_HTTP_CONCURRENCY: '1' })).toMatch(/FLOWGATE_HTTP_CONCURRENCY must be at least 2/);
    expect(errorFor({ FLOWGATE_HTTP_CONCURRENCY_PER_ORG: '0' })).toContain('FLOWGATE_HTTP_CONCURRENCY_PER_ORG');
  });

  it("an organization's daily run-data budget defaults to 2 GiB and refuses less than 1 MiB, by name", () => {
    expect(loadConfig({}).engine.runDataPerOrgPerDayBytes).toBe(2 ** 31);
    expect(loadConfig({ FLOWGATE_RUN_DATA_PER_ORG_PER_DAY_BYTES: '1048576' }).engine.runDataPerOrgPerDayBytes).toBe(1_048_576);
    expect(errorFor({ FLOWGATE_RUN_DATA_PER_ORG_PER_DAY_BYTES: '1000' })).toMatch(/FLOWGATE_RUN_DATA_PER_ORG_PER_DAY_BYTES.*at least 1048576/);
  });

  it('bounds each stored object per organization and open event streams per organization (20) by default, by name', () => {
    expect(loadConfig({}).quotas).toEqual({
      workflows: 10_000,
      projects: 1_000,
      tags: 1_000,
      integrations: 500,
      apiKeys: 100,
      webhookKeys: 100,
      members: 1_000,
      pendingInvitations: 200,
      publicTags: 50,
      publicWorkflows: 50,
      listings: 100,
    });
    expect(loadConfig({}).maxEventStreamsPerOrg).toBe(20);
    const set = loadConfig({ FLOWGATE_MAX_WORKFLOWS_PER_ORG: '50', FLOWGATE_MAX_PUBLIC_TAGS_PER_ORG: '2', FLOWGATE_MAX_EVENT_STREAMS_PER_ORG: '5' });
    expect(set.quotas).toMatchObject({ workflows: 50, publicTags: 2, tags: 1_000 });
    expect(set.maxEventStreamsPerOrg).toBe(5);
    expect(errorFor({ FLOWGATE_MAX_WORKFLOWS_PER_ORG: '0' })).toContain('FLOWGATE_MAX_WORKFLOWS_PER_ORG');
    expect(errorFor({ FLOWGATE_MAX_TAGS_PER_ORG: 'many' })).toContain('FLOWGATE_MAX_TAGS_PER_ORG');
    expect(errorFor({ FLOWGATE_MAX_EVENT_STREAMS_PER_ORG: 'lots' })).toContain('FLOWGATE_MAX_EVENT_STREAMS_PER_ORG');
  });

  it('keeps run data 30 days and audit rows 365 by default; takes a number of days or off, and refuses anything else by name', () => {
    expect(loadConfig({}).engine.runDataRetentionDays).toBe(30);
    expect(loadConfig({ FLOWGATE_RUN_DATA_RETENTION_DAYS: '7' }).engine.runDataRetentionDays).toBe(7);
    expect(loadConfig({ FLOWGATE_RUN_DATA_RETENTION_DAYS: 'off' }).engine.runDataRetentionDays).toBeUndefined();
    expect(errorFor({ FLOWGATE_RUN_DATA_RETENTION_DAYS: '0' })).toMatch(/FLOWGATE_RUN_DATA_RETENTION_DAYS.*1 to 36500, or off/);
    expect(errorFor({ FLOWGATE_RUN_DATA_RETENTION_DAYS: 'forever' })).toContain('FLOWGATE_RUN_DATA_RETENTION_DAYS');
    expect(loadConfig({}).auditLogRetentionDays).toBe(365);
    expect(loadConfig({ FLOWGATE_AUDIT_LOG_RETENTION_DAYS: 'off' }).auditLogRetentionDays).toBeUndefined();
    expect(errorFor({ FLOWGATE_AUDIT_LOG_RETENTION_DAYS: '-1' })).toContain('FLOWGATE_AUDIT_LOG_RETENTION_DAYS');
  });

  it('believes no proxy by default; takes a hop count or addresses, and refuses believing every hop, by name', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ FLOWGATE_TRUST_PROXY: 'off' }).trustProxy).toBe(false);
    expect(loadConfig({ FLOWGATE_TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ FLOWGATE_TRUST_PROXY: 'loopback, 10.0.0.0/8,fd00::/8,192.168.0.0/255.255.0.0' }).trustProxy).toEqual([
      'loopback',
      '10.0.0.0/8',
      'fd00::/8',
      '192.168.0.0/255.255.0.0',
    ]);
    expect(errorFor({ FLOWGATE_TRUST_PROXY: 'true' })).toMatch(/FLOWGATE_TRUST_PROXY.*lets any client choose the address/);
    expect(errorFor({ FLOWGATE_TRUST_PROXY: '0' })).toMatch(/FLOWGATE_TRUST_PROXY.*hop count must be 1-10/);
    expect(errorFor({ FLOWGATE_TRUST_PROXY: '10.0.0.0/33' })).toMatch(/FLOWGATE_TRUST_PROXY "10.0.0.0\/33" is not an IP address/);
    expect(errorFor({ FLOWGATE_TRUST_PROXY: 'balancer.internal' })).toContain('"balancer.internal" is not an IP address');
    expect(errorFor({ FLOWGATE_TRUST_PROXY: '10.0.0.0/255.0.255.0' })).toContain('"10.0.0.0/255.0.255.0" is not an IP address');
  });

  it('the mailer and the CAPTCHA are off by default; each is all-or-nothing and names the variable that is wrong', () => {
    expect(loadConfig({}).mailer).toBeUndefined();
    expect(loadConfig({}).captcha).toBeUndefined();
    const mailer = { FLOWGATE_EMAIL_PROVIDER: 'resend', FLOWGATE_EMAIL_API_KEY: 're_123', FLOWGATE_EMAIL_FROM: 'no-reply@example.com' };
    expect(loadConfig(mailer).mailer).toEqual({ provider: 'resend', apiKey: 're_123', from: 'no-reply@example.com', apiBaseUrl: undefined });
    expect(errorFor({ ...mailer, FLOWGATE_EMAIL_PROVIDER: 'mailgun' })).toContain('FLOWGATE_EMAIL_PROVIDER');
    expect(errorFor({ ...mailer, FLOWGATE_EMAIL_API_KEY: '' })).toContain('FLOWGATE_EMAIL_API_KEY');
    expect(errorFor({ ...mailer, FLOWGATE_EMAIL_FROM: 'not an address' })).toContain('FLOWGATE_EMAIL_FROM');
    expect(errorFor({ FLOWGATE_EMAIL_API_KEY: 're_123' })).toContain('FLOWGATE_EMAIL_PROVIDER is not');
    // The key never appears in a configuration error.
    expect(errorFor({ ...mailer, FLOWGATE_EMAIL_FROM: 'x' })).not.toContain('re_123');

    const captcha = { FLOWGATE_CAPTCHA_PROVIDER: 'hcaptcha', FLOWGATE_CAPTCHA_SECRET: '0xsecret' };
    expect(loadConfig(captcha).captcha).toEqual({ provider: 'hcaptcha', secret: '0xsecret', verifyUrl: undefined });
    expect(errorFor({ FLOWGATE_CAPTCHA_PROVIDER: 'hcaptcha' })).toContain('FLOWGATE_CAPTCHA_SECRET');
    expect(errorFor({ ...captcha, FLOWGATE_CAPTCHA_PROVIDER: 'friendly' })).toContain('FLOWGATE_CAPTCHA_PROVIDER');
    expect(errorFor({ ...captcha, FLOWGATE_CAPTCHA_VERIFY_URL: 'ftp://x' })).toContain('FLOWGATE_CAPTCHA_VERIFY_URL');
    expect(errorFor({ FLOWGATE_CAPTCHA_SECRET: 'x' })).toContain('FLOWGATE_CAPTCHA_PROVIDER is not');
  });

  it('reads allowed browser origins and the request timeout, refusing origins with a path', () => {
    const config = loadConfig({ FLOWGATE_ALLOWED_ORIGINS: 'https://App.Example.com, http://localhost:5173/', FLOWGATE_REQUEST_TIMEOUT_MS: '2500' });
    expect(config.allowedOrigins).toEqual(['https://app.example.com', 'http://localhost:5173']);
    expect(config.requestTimeoutMs).toBe(2500);
    expect(loadConfig({}).allowedOrigins).toEqual([]);
    expect(loadConfig({}).requestTimeoutMs).toBe(10_000);
    expect(errorFor({ FLOWGATE_ALLOWED_ORIGINS: 'https://app.example.com/dashboard' })).toContain('FLOWGATE_ALLOWED_ORIGINS');
    expect(errorFor({ FLOWGATE_ALLOWED_ORIGINS: 'app.example.com' })).toContain('FLOWGATE_ALLOWED_ORIGINS');
    expect(errorFor({ FLOWGATE_REQUEST_TIMEOUT_MS: '10' })).toContain('FLOWGATE_REQUEST_TIMEOUT_MS');
  });

  it('derives the base URL from PORT and strips a trailing slash from an explicit one', () => {
    expect(loadConfig({ PORT: '8080' }).baseUrl).toBe('http://localhost:8080');
    // Printed URLs reach the address the gateway listens on.
    expect(loadConfig({ PORT: '8080', HOST: '192.168.1.20' }).baseUrl).toBe('http://192.168.1.20:8080');
    expect(loadConfig({ PORT: '8080', HOST: 'fd00::5' }).baseUrl).toBe('http://[fd00::5]:8080');
    expect(loadConfig({ PORT: '8080', HOST: '0.0.0.0' }).baseUrl).toBe('http://localhost:8080');
    expect(loadConfig({ PORT: '8080', HOST: '::1' }).baseUrl).toBe('http://localhost:8080');
    expect(loadConfig({ FLOWGATE_BASE_URL: 'https://gw.example.com/' }).baseUrl).toBe('https://gw.example.com');
  });

  it('reads per-chain RPC and explorer overrides', () => {
    const config = loadConfig({ FLOWGATE_RPC_URL_8453: 'http://127.0.0.1:9545', FLOWGATE_EXPLORER_API_URL_1: 'http://127.0.0.1:9999/api' });
    expect(config.rpcUrls).toEqual({ 8453: 'http://127.0.0.1:9545' });
    expect(config.explorerApiUrls).toEqual({ 1: 'http://127.0.0.1:9999/api' });
  });

  it('lets FLOWGATE_RATE_LIMITS=off lift request limits but never the spend caps', () => {
    const config = loadConfig({ FLOWGATE_RATE_LIMITS: 'off', EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI: '5' });
    expect(config.rateLimitsEnabled).toBe(false);
    expect(config.spend.dailyValueCapWei).toBe(5n);
  });

  it.each([
    [{ PORT: 'abc' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ FLOWGATE_BASE_URL: 'not a url' }, 'FLOWGATE_BASE_URL'],
    [{ FLOWGATE_DEVNET: 'maybe' }, 'FLOWGATE_DEVNET'],
    [{ FLOWGATE_RATE_LIMITS: 'yes' }, 'FLOWGATE_RATE_LIMITS'],
    [{ FLOWGATE_RATE_LIMIT_MCP_PER_ORG: '0' }, 'FLOWGATE_RATE_LIMIT_MCP_PER_ORG'],
    [{ EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI: '0.02' }, 'EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI'],
    [{ EXECUTE_DEFAULT_STABLECOIN_CAP_MICRO_USD: '-1' }, 'EXECUTE_DEFAULT_STABLECOIN_CAP_MICRO_USD'],
    [{ FLOWGATE_RPC_URL_8453: 'ftp://x' }, 'FLOWGATE_RPC_URL_8453'],
    [{ FLOWGATE_RPC_URL_base: 'http://x' }, 'FLOWGATE_RPC_URL_base'],
    [{ FLOWGATE_MASTER_KEY: 'short' }, 'FLOWGATE_MASTER_KEY'],
  ])('refuses %j with one line naming the variable', (env, variable) => {
    const message = errorFor(env as Record<string, string>);
    expect(message).toContain(variable);
    expect(message.split('\n')).toHaveLength(1);
  });
});
