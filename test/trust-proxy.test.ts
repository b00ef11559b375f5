import { afterAll, describe, expect, it } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { browserClient, siweMessage } from './helpers/session.ts';

/**
 * Which address per-IP limits, sessions and the audit log see. By default the
 * socket's: X-Forwarded-For is written by the client and is not believed.
 * Behind a balancer (FLOWGATE_TRUST_PROXY) it is the address the trusted proxy
 * saw, so clients each get their own budget instead of sharing the
 * balancer's, and a client cannot escape its own by prepending addresses.
 * The test's own requests come from 127.0.0.1 and play the proxy.
 */

const gateways: TestGateway[] = [];
afterAll(async () => {
  await Promise.all(gateways.map((g) => g.close()));
});

async function gatewayWith(env: Record<string, string>): Promise<TestGateway> {
  const gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMIT_SIWE_NONCE_PER_IP: '2', ...env } });
  gateways.push(gw);
  return gw;
}

const account = privateKeyToAccount(generatePrivateKey());

/** A wallet sign-in nonce request (limited per IP; sent as the gateway's own page would) as if forwarded for `forwardedFor`. */
async function nonce(gw: TestGateway, forwardedFor?: string): Promise<number> {
  const res = await fetch(`${gw.url}/api/auth/siwe/nonce`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: new URL(gw.url).origin, ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) },
    body: JSON.stringify({ walletAddress: account.address, chainId: 1 }),
  });
  await res.arrayBuffer();
  return res.status;
}

describe('the client address behind proxies', () => {
  it('ignores X-Forwarded-For by default: a client cannot pick a fresh budget by naming another address', async () => {
    const gw = await gatewayWith({});
    expect([await nonce(gw, '203.0.113.1'), await nonce(gw, '203.0.113.1')]).toEqual([200, 200]);
    expect(await nonce(gw, '203.0.113.2')).toBe(429);
    expect(await nonce(gw)).toBe(429);
  }, 60_000);

  it('with FLOWGATE_TRUST_PROXY=1 counts each forwarded client on its own, and prepended addresses change nothing', async () => {
    const gw = await gatewayWith({ FLOWGATE_TRUST_PROXY: '1' });
    expect([await nonce(gw, '203.0.113.1'), await nonce(gw, '203.0.113.1')]).toEqual([200, 200]);
    expect(await nonce(gw, '203.0.113.1')).toBe(429);
    // The balancer appends the address it saw; what the client wrote before it is not believed.
    expect(await nonce(gw, '198.51.100.9, 203.0.113.1')).toBe(429);
    expect(await nonce(gw, '203.0.113.2')).toBe(200);

    // A session opened through the proxy records the client's address.
    const client = browserClient(gw.url);
    const forwarded = { 'x-forwarded-for': '198.51.100.7' };
    const issued = await client.fetch('/api/auth/siwe/nonce', { method: 'POST', headers: forwarded, json: { walletAddress: account.address, chainId: 1 } });
    expect(issued.status).toBe(200);
    const message = siweMessage(gw.url, account, issued.body.nonce);
    const verified = await client.fetch('/api/auth/siwe/verify', {
      method: 'POST',
      headers: forwarded,
      json: { message, signature: await account.signMessage({ message }), walletAddress: account.address, chainId: 1 },
    });
    expect(verified.status, JSON.stringify(verified.body)).toBe(200);
    const sessions = await client.fetch('/api/auth/sessions');
    expect(sessions.status).toBe(200);
    expect(JSON.stringify(sessions.body)).toContain('"ip":"198.51.100.7"');
  }, 60_000);

  it('with a list of proxy addresses believes only hops from those addresses', async () => {
    // 127.0.0.1 is not in 10.0.0.0/8: the test's requests are not from a trusted proxy, so their header is ignored.
    const untrusted = await gatewayWith({ FLOWGATE_TRUST_PROXY: '10.0.0.0/8' });
    expect([await nonce(untrusted, '203.0.113.1'), await nonce(untrusted, '203.0.113.2')]).toEqual([200, 200]);
    expect(await nonce(untrusted, '203.0.113.3')).toBe(429);

    const trusted = await gatewayWith({ FLOWGATE_TRUST_PROXY: 'loopback' });
    expect([await nonce(trusted, '203.0.113.1'), await nonce(trusted, '203.0.113.2'), await nonce(trusted, '203.0.113.3')]).toEqual([200, 200, 200]);
    expect([await nonce(trusted, '203.0.113.1'), await nonce(trusted, '203.0.113.1')]).toEqual([200, 429]);
  }, 60_000);

  it('counts an IPv6 client by its /64, so rotating addresses inside it earns no fresh budget; IPv4 written IPv4-mapped is the same client', async () => {
    const gw = await gatewayWith({ FLOWGATE_TRUST_PROXY: '1' });
    expect([await nonce(gw, '2001:db8:1:2::1'), await nonce(gw, '2001:db8:1:2:aaaa:bbbb:cccc:dddd')]).toEqual([200, 200]);
    expect(await nonce(gw, '2001:0db8:0001:0002::ffff')).toBe(429);
    // The next /64 is another subscriber.
    expect(await nonce(gw, '2001:db8:1:3::1')).toBe(200);
    // One IPv4 client, however its address is written.
    expect([await nonce(gw, '192.0.2.44'), await nonce(gw, '::ffff:192.0.2.44')]).toEqual([200, 200]);
    expect(await nonce(gw, '192.0.2.44')).toBe(429);
    expect(await nonce(gw, '192.0.2.45')).toBe(200);
  }, 60_000);
});
