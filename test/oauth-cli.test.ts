import { expect, it } from 'vitest';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { runCli } from './helpers/cli.ts';
import { fetchJson, startTestGateway } from './helpers/gateway.ts';
import { browserClient, signIn } from './helpers/session.ts';
import { TestOAuthProvider } from './helpers/oauth.ts';

/** `flowgate oauth list|revoke` as the host operator runs them, against the database of a running gateway. */

it('lists connected clients and revokes one; the running gateway refuses its token at the next request', { timeout: 180_000 }, async () => {
  const gw = await startTestGateway();
  try {
    const browser = browserClient(gw.url);
    const signed = await signIn(browser, gw.url, privateKeyToAccount(generatePrivateKey()));
    const serverUrl = new URL(`${gw.url}/mcp`);
    const provider = new TestOAuthProvider(browser, { clientName: 'CLI Test Connector' });
    await auth(provider, { serverUrl });
    await auth(provider, { serverUrl, authorizationCode: provider.code() });
    const token = provider.saved!.access_token;
    const probe = () =>
      fetchJson(`${gw.url}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
    expect((await probe()).status).toBe(200);

    const env = { FLOWGATE_DATA_DIR: gw.dataDir };
    const listed = await runCli(['oauth', 'list', '--org', signed.organization.slug, '--json'], env);
    expect(listed.code, listed.stderr).toBe(0);
    const [grant] = JSON.parse(listed.stdout);
    expect(grant).toMatchObject({ clientName: 'CLI Test Connector', scope: 'mcp:admin', resource: `${gw.url}/mcp`, revokedAt: null });
    expect(listed.stdout).not.toContain(token);
    const table = await runCli(['oauth', 'list', '--org', signed.organization.slug], env);
    expect(table.stdout).toContain('CLI Test Connector');

    const revoked = await runCli(['oauth', 'revoke', grant.id], env);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain(`Revoked connected client ${grant.id}`);
    expect((await probe()).status).toBe(401);
    const again = await runCli(['oauth', 'revoke', grant.id], env);
    expect(again.stdout).toContain('already revoked');
    const unknown = await runCli(['oauth', 'revoke', 'nope'], env);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('No connected client "nope"');
  } finally {
    await gw.close();
  }
});
