import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';

/**
 * docs/quick-start.md promises its first workflow works on a fresh checkout
 * with no chain configuration. Its example read Base (8453), which a gateway
 * without internet cannot reach; it now reads the devnet `npm start` runs.
 * This takes the request body from the page itself and runs it.
 */

const page = fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '../docs/quick-start.md'), 'utf8');
/** The JSON of the page's `curl .../api/workflows/create ... -d '...'`. */
const createBody = JSON.parse(/\/api\/workflows\/create[\s\S]*?-d '([\s\S]*?)'/.exec(page)![1]!) as Record<string, unknown>;

let chain: TestChain;
let gw: TestGateway;

beforeAll(async () => {
  chain = await startTestChain(31337);
  gw = await startTestGateway({ env: { FLOWGATE_DEVNET: 'auto', FLOWGATE_RPC_URL_31337: chain.url } });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await chain?.stop();
});

describe('the quick start page', () => {
  it('runs its first workflow to success on the development chain, with the balance it names', async () => {
    await chain.setBalance('0x000000000000000000000000000000000000dEaD', '1.5');
    const api = (p: string, body?: unknown) =>
      fetchJson(`${gw.url}${p}`, {
        key: gw.ownerKey,
        method: body === undefined ? 'GET' : 'POST',
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const created = await api('/api/workflows/create', createBody);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const started = await api(`/api/workflows/${created.body.id}/execute`, {});
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const done = (await api(`/api/workflows/executions/${started.body.executionId}/wait`)).body;
    expect(done.status, done.error).toBe('success');
    expect(JSON.stringify(done.output)).toContain('1.5');
  }, 60_000);
});
