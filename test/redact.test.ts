import { describe, expect, it } from 'vitest';
import { isCredentialName, redact, redactOutput, redactSecrets } from '../src/text/redact.ts';

describe('credential names', () => {
  it.each([
    'Authorization',
    'Proxy-Authorization',
    'X-Api-Key',
    'x-apikey',
    'apiKey',
    'api_key',
    'X-Custom-Auth',
    'X-Auth-Token',
    'accessToken',
    'access_token',
    'token',
    'key',
    'privateKey',
    'clientSecret',
    'password',
    'Cookie',
    'set-cookie',
    'sessionId',
    'X-Session',
    'sig',
    'mnemonic',
  ])('%s is a credential', (name) => expect(isCredentialName(name)).toBe(true));

  it.each([
    'tokenConfig',
    'tokenAddress',
    'token_address',
    'keyId',
    'keywords',
    'author',
    'Accept',
    'Content-Type',
    'publicKey',
    'leftKeys',
    'monkey',
    'endpoint',
  ])('%s is not a credential', (name) => expect(isCredentialName(name)).toBe(false));
});

describe('redaction', () => {
  it('hides secret-looking fields, also inside JSON header strings, and keeps the rest', () => {
    const redacted = redactSecrets({
      endpoint: 'https://api.example.com',
      apiKey: 'sk-live-123',
      nested: { password: 'hunter2', user: 'alice' },
      httpHeaders: JSON.stringify({ Authorization: 'Bearer abc', Accept: 'application/json' }),
      list: [{ privateKey: '0xdead' }],
    }) as Record<string, any>;
    expect(redacted.apiKey).toBe('[REDACTED]');
    expect(redacted.nested).toEqual({ password: '[REDACTED]', user: 'alice' });
    expect(JSON.parse(redacted.httpHeaders)).toEqual({ Authorization: '[REDACTED]', Accept: 'application/json' });
    expect(redacted.list[0].privateKey).toBe('[REDACTED]');
    expect(redacted.endpoint).toBe('https://api.example.com');
    expect(JSON.stringify(redacted)).not.toMatch(/sk-live|hunter2|Bearer abc|0xdead/);
  });

  it('hides URL userinfo and credential query parameters, form fields, and reports each path', () => {
    const { value, paths, secrets } = redact(
      {
        endpoint: 'https://bob:s3cr3t-pw@api.example.com/v1/items?api_key=ak_1234567&limit=5&token=tk_7654321#top',
        httpBody: 'username=bob&password=form-pass-1',
        httpHeaders: '{"X-Custom-Auth":"custom-auth-1"}',
      },
      'config',
    );
    expect(value.endpoint).toBe('https://[REDACTED]@api.example.com/v1/items?api_key=[REDACTED]&limit=5&token=[REDACTED]#top');
    expect(value.httpBody).toBe('username=bob&password=[REDACTED]');
    expect(paths).toEqual([
      'config.endpoint@userinfo',
      'config.endpoint?api_key',
      'config.endpoint?token',
      'config.httpBody.password',
      'config.httpHeaders.X-Custom-Auth',
    ]);
    expect(secrets).toEqual(expect.arrayContaining(['s3cr3t-pw', 'ak_1234567', 'tk_7654321', 'form-pass-1', 'custom-auth-1']));
  });

  it('hides the secret part of URLs that are their own credential, for each provider listed in the README, and keeps a templated one', () => {
    const urls = {
      slack: ['https://hooks.slack.com/services/T1/B1/slackSecret', 'https://hooks.slack.com/services/[REDACTED]'],
      discord: ['https://discordapp.com/api/v10/webhooks/42/discordSecret?wait=true', 'https://discordapp.com/api/v10/webhooks/42/[REDACTED]?wait=true'],
      teams: ['https://contoso.webhook.office.com/webhookb2/teamsSecret/IncomingWebhook/x', 'https://contoso.webhook.office.com/[REDACTED]'],
      zapier: ['https://hooks.zapier.com/hooks/catch/123/zapierSecret/', 'https://hooks.zapier.com/hooks/catch/[REDACTED]'],
      telegram: ['https://api.telegram.org/bot99:telegramSecret/sendMessage', 'https://api.telegram.org/bot[REDACTED]/sendMessage'],
      templated: ['https://hooks.slack.com/services/{{@int:slack.path}}', 'https://hooks.slack.com/services/{{@int:slack.path}}'],
      elsewhere: ['https://example.com/services/T1/B1/notSecret', 'https://example.com/services/T1/B1/notSecret'],
    };
    const { value, paths, secrets } = redact(Object.fromEntries(Object.entries(urls).map(([k, [url]]) => [k, url])), 'c');
    expect(value).toEqual(Object.fromEntries(Object.entries(urls).map(([k, [, shown]]) => [k, shown])));
    expect(paths.sort()).toEqual(['c.discord@path', 'c.slack@path', 'c.teams@path', 'c.telegram@path', 'c.zapier@path']);
    expect(secrets).toEqual(expect.arrayContaining(['T1/B1/slackSecret', 'discordSecret', '99:telegramSecret']));
  });

  it('hides credentials in header maps that are not valid JSON', () => {
    const { value, paths } = redact({ httpHeaders: '{Authorization: "Bearer loose-secret-1", "X-Api-Key": loose-key-2, Accept: "text/plain",}' });
    expect(value.httpHeaders).toBe('{Authorization: "[REDACTED]", "X-Api-Key": [REDACTED], Accept: "text/plain",}');
    expect(paths).toEqual(['httpHeaders.Authorization', 'httpHeaders.X-Api-Key']);
  });

  it('keeps web3 token fields, addresses, booleans and template-only values visible', () => {
    const tokenConfig = '{"mode":"custom","customToken":{"address":"0x1111111111111111111111111111111111111111","symbol":"USDC"}}';
    const input = {
      tokenConfig,
      tokenAddress: '0x2222222222222222222222222222222222222222',
      token: '0x3333333333333333333333333333333333333333',
      keyId: 'k-1',
      requiresAuth: true,
      httpHeaders: '{"Authorization":"Bearer {{@trigger:Trigger.token}}"}',
      httpBody: '{{@auth:Auth.data.body}}',
    };
    const { value, paths } = redact(input);
    expect(value).toEqual(input);
    expect(value.tokenConfig).toBe(tokenConfig); // byte-identical, not re-serialized
    expect(paths).toEqual([]);
  });

  it('hides set-cookie and credential response headers and echoed secrets in a step output', () => {
    const { secrets } = redact({ httpHeaders: '{"Authorization":"Bearer echo-me-123"}', endpoint: 'http://h/x?api_key=qk_999999' });
    const output = redactOutput(
      {
        success: true,
        headers: { 'set-cookie': 'sid=abc123456; HttpOnly', 'content-type': 'application/json', 'x-auth-token': 'srv-token-1' },
        data: { headers: { authorization: 'Bearer echo-me-123' }, seen: 'echo-me-123' },
        url: 'http://h/x?api_key=qk_999999',
      },
      secrets,
    ) as any;
    expect(output.headers).toEqual({ 'set-cookie': '[REDACTED]', 'content-type': 'application/json', 'x-auth-token': '[REDACTED]' });
    expect(JSON.stringify(output)).not.toMatch(/echo-me-123|qk_999999|abc123456|srv-token-1/);
    expect(output.url).toBe('http://h/x?api_key=[REDACTED]');
  });

  it('hides credential query parameters of the final URL even when the input did not carry them', () => {
    const output = redactOutput({ success: true, url: 'https://h/landing?access_token=abc&page=2' }, []) as any;
    expect(output.url).toBe('https://h/landing?access_token=[REDACTED]&page=2');
  });
});
