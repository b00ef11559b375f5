import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { browserClient, siweMessage, signIn } from './helpers/session.ts';

/** Wallet sign-in (EIP-4361) and the session cookie, over real HTTP with a real cookie jar. */

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => gw.close());

const newAccount = () => privateKeyToAccount(generatePrivateKey());

async function nonceFor(client: ReturnType<typeof browserClient>, address: string, chainId = 1) {
  const res = await client.fetch('/api/auth/siwe/nonce', { method: 'POST', json: { walletAddress: address, chainId } });
  expect(res.status).toBe(200);
  return res.body.nonce as string;
}

describe('wallet sign-in', () => {
  it('first sign-in creates user, organization (owner) and wallet; the cookie opens the session', async () => {
    const account = newAccount();
    const client = browserClient(gw.url);
    const first = await signIn(client, gw.url, account);
    expect(first.created).toBe(true);
    expect(first.organization.role).toBe('owner');

    const cookies = await client.jar.getCookies(gw.url);
    const cookie = cookies.find((c) => c.key === 'flowgate_session')!;
    expect(cookie.httpOnly).toBe(true);
    expect(cookie.sameSite).toBe('lax');
    expect(cookie.secure).toBe(false); // plain http base URL

    const session = await client.fetch('/api/auth/session');
    expect(session.status).toBe(200);
    expect(session.body.user.walletAddress).toBe(account.address);
    expect(session.body.organization.id).toBe(first.organization.id);

    // The session reaches organization data: the new organization's wallet exists.
    const wallet = await client.fetch('/api/user/wallet');
    expect(wallet.status).toBe(200);
    expect(wallet.body.walletAddress).toMatch(/^0x[0-9a-fA-F]{40}$/);

    // A second sign-in of the same wallet finds the same account.
    const again = await signIn(browserClient(gw.url), gw.url, account);
    expect(again.created).toBe(false);
    expect(again.organization.id).toBe(first.organization.id);
  });

  it('lastSeenAt is rewritten from the row itself once it is over a minute old, not from memory of this process', async () => {
    const client = browserClient(gw.url);
    await signIn(client, gw.url, newAccount());
    const current = async () =>
      ((await client.fetch('/api/auth/sessions')).body as { current: boolean; lastSeenAt: string; id: string }[]).find((s) => s.current)!;
    const { id } = await current();
    const setSeen = (iso: string) => gw.gateway.services.store.updateTable('sessions').set({ last_seen_at: iso }).where('id', '=', id).execute();

    // As if the session was last used long ago (or by another instance that wrote it): the next request records it.
    await setSeen('2020-01-01T00:00:00.000Z');
    await client.fetch('/api/auth/session');
    expect(Date.now() - Date.parse((await current()).lastSeenAt)).toBeLessThan(60_000);

    // Seen half a minute ago: not rewritten yet.
    const recent = new Date(Date.now() - 30_000).toISOString();
    await setSeen(recent);
    await client.fetch('/api/auth/session');
    expect((await current()).lastSeenAt).toBe(recent);
  });

  it('sign-out ends the session server-side: the old cookie no longer works', async () => {
    const client = browserClient(gw.url);
    await signIn(client, gw.url, newAccount());
    const [cookie] = await client.jar.getCookies(gw.url);
    const out = await client.fetch('/api/auth/sign-out', { method: 'POST' });
    expect(out.status).toBe(200);
    // Replay the captured cookie by hand, as a thief would.
    const replay = await fetch(`${gw.url}/api/auth/session`, { headers: { cookie: `${cookie!.key}=${cookie!.value}` } });
    expect(replay.status).toBe(401);
    expect((await replay.json()).code).toBe('session_required');
  });

  it.each([
    ['wrong domain', { domain: 'evil.example' }, /Wrong domain.*evil\.example/],
    ['wrong URI', { uri: 'https://evil.example/login' }, /Wrong URI/],
    ['chain mismatch', { chainId: 10 }, /Chain mismatch/],
    ['expired message', { expirationTime: new Date(Date.now() - 1000) }, /expired/],
  ])('refuses a message with %s (401 naming the check)', async (_name, overrides, pattern) => {
    const account = newAccount();
    const client = browserClient(gw.url);
    const nonce = await nonceFor(client, account.address);
    const message = siweMessage(gw.url, account, nonce, overrides);
    const signature = await account.signMessage({ message });
    const res = await client.fetch('/api/auth/siwe/verify', { method: 'POST', json: { message, signature, walletAddress: account.address, chainId: 1 } });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('siwe_invalid');
    expect(res.body.error).toMatch(pattern);
    expect(res.headers.get('set-cookie')).toBeNull();
  });

  it('a nonce works once; a signature from another address is refused', async () => {
    const account = newAccount();
    const client = browserClient(gw.url);
    const nonce = await nonceFor(client, account.address);
    const message = siweMessage(gw.url, account, nonce);
    const forged = await newAccount().signMessage({ message });
    const bad = await client.fetch('/api/auth/siwe/verify', {
      method: 'POST',
      json: { message, signature: forged, walletAddress: account.address, chainId: 1 },
    });
    expect(bad.status).toBe(401);
    expect(bad.body.error).toMatch(/signature is not from/);
    // The nonce was spent by that attempt: even the right signature cannot reuse it.
    const signature = await account.signMessage({ message });
    const reused = await client.fetch('/api/auth/siwe/verify', { method: 'POST', json: { message, signature, walletAddress: account.address, chainId: 1 } });
    expect(reused.status).toBe(401);
    expect(reused.body.error).toMatch(/already used nonce/);
  });

  it('state-changing /api/auth/* requests need an Origin; a foreign one is Invalid origin', async () => {
    const account = newAccount();
    const missing = await browserClient(gw.url, { origin: null }).fetch('/api/auth/siwe/nonce', {
      method: 'POST',
      json: { walletAddress: account.address, chainId: 1 },
    });
    expect(missing.status).toBe(403);
    expect(missing.body.code).toBe('MISSING_OR_NULL_ORIGIN');
    const foreign = await browserClient(gw.url, { origin: 'https://evil.example' }).fetch('/api/auth/siwe/nonce', {
      method: 'POST',
      json: { walletAddress: account.address, chainId: 1 },
    });
    expect(foreign.status).toBe(403);
    expect(foreign.body).toMatchObject({ error: 'Invalid origin', code: 'invalid_origin' });
    // The same routes spelled with percent-encoding or doubled slashes reach the same operations, and the same rule.
    for (const path of ['/api/%61uth/siwe/nonce', '/api/%61%75%74%68/siwe/nonce', '/api//auth/siwe/nonce']) {
      const spelled = await browserClient(gw.url, { origin: 'https://evil.example' }).fetch(path, {
        method: 'POST',
        json: { walletAddress: account.address, chainId: 1 },
      });
      expect(spelled.status, path).toBe(403);
      const bare = await browserClient(gw.url, { origin: null }).fetch(path, { method: 'POST', json: { walletAddress: account.address, chainId: 1 } });
      expect(bare.status, path).toBe(403);
    }
  });

  it('a cookie request that changes state from a foreign origin is refused; Referer stands in for a missing Origin; bearer callers need neither', async () => {
    const client = browserClient(gw.url);
    await signIn(client, gw.url, newAccount());
    const foreign = await client.fetch('/api/tags', { method: 'POST', json: { name: 'csrf', color: '#3b82f6' }, headers: { origin: 'https://evil.example' } });
    expect(foreign.status).toBe(403);
    expect(foreign.body.error).toBe('Invalid origin');

    const [cookie] = await client.jar.getCookies(gw.url);
    const cookieHeader = `${cookie!.key}=${cookie!.value}`;
    const refererOk = await fetch(`${gw.url}/api/tags`, {
      method: 'POST',
      headers: { cookie: cookieHeader, referer: `${gw.url}/app/tags`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'from-page', color: '#3b82f6' }),
    });
    expect(refererOk.status).toBe(201);
    const neither = await fetch(`${gw.url}/api/tags`, {
      method: 'POST',
      headers: { cookie: cookieHeader, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'no-origin', color: '#3b82f6' }),
    });
    expect(neither.status).toBe(403);

    const bearer = await fetch(`${gw.url}/api/tags`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.ownerKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bearer-no-origin', color: '#3b82f6' }),
    });
    expect(bearer.status).toBe(201);
  });

  it('session routes refuse API keys', async () => {
    const res = await fetch(`${gw.url}/api/auth/session`, { headers: { authorization: `Bearer ${gw.ownerKey}` } });
    expect(res.status).toBe(401);
    expect((await res.json()).code).toBe('session_required');
  });

  it('nonce and verify are rate-limited per IP (429 rate_limited with Retry-After)', async () => {
    const limited = await startTestGateway({ env: { FLOWGATE_RATE_LIMIT_SIWE_NONCE_PER_IP: '3', FLOWGATE_RATE_LIMIT_SIWE_VERIFY_PER_IP: '2' } });
    try {
      const client = browserClient(limited.url);
      const account = newAccount();
      const nonces = [];
      for (let i = 0; i < 3; i++) nonces.push(await nonceFor(client, account.address));
      const fourth = await client.fetch('/api/auth/siwe/nonce', { method: 'POST', json: { walletAddress: account.address, chainId: 1 } });
      expect(fourth.status).toBe(429);
      expect(fourth.body.code).toBe('rate_limited');
      expect(Number(fourth.headers.get('retry-after'))).toBeGreaterThan(0);

      for (const [i, nonce] of nonces.entries()) {
        const message = siweMessage(limited.url, account, nonce);
        const signature = await account.signMessage({ message });
        const res = await client.fetch('/api/auth/siwe/verify', { method: 'POST', json: { message, signature, walletAddress: account.address, chainId: 1 } });
        expect(res.status).toBe(i < 2 ? 200 : 429);
      }
    } finally {
      await limited.close();
    }
  });
});
