import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { ERC20_ABI, startExplorer, UNVERIFIED, VERIFIED } from './helpers/explorer.ts';

let gw: TestGateway;
let explorer: Awaited<ReturnType<typeof startExplorer>>;

beforeAll(async () => {
  explorer = await startExplorer();
  gw = await startTestGateway({
    env: { FLOWGATE_EXPLORER_API_URL_8453: `${explorer.url}/api`, FLOWGATE_RPC_URL_8453: 'http://127.0.0.1:1/secret-rpc-path' },
  });
});
afterAll(async () => {
  await gw.close();
  explorer.server.close();
});

describe('GET /api/chains', () => {
  it('is public and returns a bare array of enabled chains with the documented fields', async () => {
    const { status, body } = await fetchJson(`${gw.url}/api/chains`);
    expect(status).toBe(200);
    expect(Array.isArray(body)).toBe(true);
    const ids = body.map((c: { chainId: number }) => c.chainId);
    for (const id of [1, 8453, 42161, 10, 137, 11155111, 84532, 16661, 16602, 5042, 5042002, 999, 130, 1301, 5031, 50312, 101, 103, 4217, 42431]) {
      expect(ids).toContain(id);
    }
    const base = body.find((c: { chainId: number }) => c.chainId === 8453);
    expect(Object.keys(base).sort()).toEqual(
      [
        'id',
        'chainId',
        'name',
        'symbol',
        'chainType',
        'explorerUrl',
        'explorerAddressPath',
        'explorerApiUrl',
        'explorerApiType',
        'isTestnet',
        'isEnabled',
        'usePrivateMempoolRpc',
      ].sort(),
    );
    expect(body.find((c: { chainId: number }) => c.chainId === 101).chainType).toBe('solana');
    expect(body.every((c: { isEnabled: boolean }) => c.isEnabled)).toBe(true);
  });

  it('never returns RPC URLs, including configured ones', async () => {
    const { body } = await fetchJson(`${gw.url}/api/chains?includeDisabled=true`);
    const text = JSON.stringify(body);
    expect(text).not.toContain('secret-rpc-path');
    expect(text).not.toMatch(/rpcUrl|"rpc"|https?:\/\/[^"]*rpc/i);
  });

  it('adds disabled chains only with includeDisabled', async () => {
    const enabled = (await fetchJson(`${gw.url}/api/chains`)).body as { chainId: number; isEnabled: boolean }[];
    const all = (await fetchJson(`${gw.url}/api/chains?includeDisabled=true`)).body as { chainId: number; isEnabled: boolean }[];
    expect(all.length).toBeGreaterThan(enabled.length);
    expect(all.filter((c) => !c.isEnabled).map((c) => c.chainId)).toContain(31337); // FLOWGATE_DEVNET=off in tests
    expect(enabled.map((c) => c.chainId)).not.toContain(31337);
    expect(all.find((c) => c.chainId === 31337)).toMatchObject({ name: 'Flowgate Devnet', isTestnet: true });
  });
});

describe('GET /api/chains/{chainId}/abi', () => {
  it('fetches a verified ABI through the explorer API by numeric id or alias, then serves it from cache', async () => {
    const before = explorer.requests.length;
    const first = await fetchJson(`${gw.url}/api/chains/8453/abi?address=${VERIFIED}`, { key: gw.ownerKey });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ success: true, abi: ERC20_ABI });
    expect(first.body.explorerUrl).toContain(VERIFIED);
    const second = await fetchJson(`${gw.url}/api/chains/base/abi?address=${VERIFIED.toLowerCase()}`, { key: gw.ownerKey });
    expect(second.body.abi).toEqual(ERC20_ABI);
    expect(explorer.requests.length).toBe(before + 1);
  });

  it('answers an unverified contract with a clear 404', async () => {
    const res = await fetchJson(`${gw.url}/api/chains/8453/abi?address=${UNVERIFIED}`, { key: gw.ownerKey });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('abi_not_verified');
    expect(res.body.error).toMatch(/abi/i);
  });

  it('refuses a bad address with 400, a missing one with the field name, an unknown chain with 404', async () => {
    const bad = await fetchJson(`${gw.url}/api/chains/8453/abi?address=0x1234`, { key: gw.ownerKey });
    expect(bad.status).toBe(400);
    const missing = await fetchJson(`${gw.url}/api/chains/8453/abi`, { key: gw.ownerKey });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toContain('address');
    const unknown = await fetchJson(`${gw.url}/api/chains/424242/abi?address=${VERIFIED}`, { key: gw.ownerKey });
    expect(unknown.status).toBe(404);
  });

  it("counts each organization's requests to the explorer, not its cache hits: one tenant cannot spend the operator's explorer key for all", async () => {
    const limited = await startTestGateway({
      env: { FLOWGATE_EXPLORER_API_URL_8453: `${explorer.url}/api`, FLOWGATE_RATE_LIMIT_EXPLORER_LOOKUPS_PER_ORG: '3' },
    });
    try {
      const hostile = await limited.createKey({ org: 'explorer-hostile' });
      const neighbour = await limited.createKey({ org: 'explorer-neighbour' });
      const abi = (key: string, address: string) => fetchJson(`${limited.url}/api/chains/8453/abi?address=${address}`, { key });
      // A verified ABI the neighbour fetched is cached: anyone's later lookups of it are free.
      expect((await abi(neighbour, VERIFIED)).status).toBe(200);
      // Unverified contracts are asked anew each time: three reach the explorer, the fourth does not.
      const before = explorer.requests.length;
      const unverified = (i: number) => `0x${i.toString(16).padStart(40, '0')}`;
      for (let i = 1; i <= 3; i++) expect((await abi(hostile, unverified(i))).body.code).toBe('abi_not_verified');
      const refused = await abi(hostile, unverified(4));
      expect(refused.status).toBe(429);
      expect(refused.body.code).toBe('rate_limited');
      expect(refused.body.error).toContain('block-explorer ABI requests per organization per minute');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(explorer.requests.length).toBe(before + 3);
      // The cached ABI still answers the hostile tenant, and the neighbour's own budget is untouched.
      expect((await abi(hostile, VERIFIED)).status).toBe(200);
      expect((await abi(neighbour, unverified(5))).body.code).toBe('abi_not_verified');
      expect(explorer.requests.length).toBe(before + 4);
    } finally {
      await limited.close();
    }
  });

  it('tells the caller to pass the ABI on chains without automatic lookup', async () => {
    const res = await fetchJson(`${gw.url}/api/chains/5042/abi?address=${VERIFIED}`, { key: gw.ownerKey });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('abi_unavailable');
  });

  it('needs an organization key', async () => {
    expect((await fetchJson(`${gw.url}/api/chains/8453/abi?address=${VERIFIED}`)).status).toBe(401);
  });
});
