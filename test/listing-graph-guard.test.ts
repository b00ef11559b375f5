import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';

/**
 * A listed workflow's graph can change after it was listed. The gateway goes
 * on offering the listing (in /openapi.json, GET /api/mcp/workflows and
 * /mcp/w/{slug}), so a change that leaves the listing unable to run is
 * refused, naming the listing and both ways out, and nothing is saved.
 */

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

const api = (path: string, method = 'GET', body?: unknown) =>
  fetchJson(`${gw.url}${path}`, { method, key: gw.ownerKey, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });

const ADDRESS = '0x000000000000000000000000000000000000dEaD';
const trigger = { id: 'trigger', type: 'trigger', data: { label: 'Manual Trigger', config: { triggerType: 'Manual' } } };
const greet = (id: string) => ({
  id,
  type: 'action',
  data: { label: `Greet ${id}`, config: { actionType: 'code/run-code', code: "return { greeting: 'hi' };" } },
});
const transfer = (amount: string) => ({
  id: 'pay',
  type: 'action',
  data: {
    label: 'Pay',
    config: {
      actionType: 'web3/write-contract',
      network: '8453',
      contractAddress: ADDRESS,
      abi: JSON.stringify([
        {
          type: 'function',
          name: 'transfer',
          stateMutability: 'nonpayable',
          inputs: [
            { name: 'to', type: 'address' },
            { name: 'amount', type: 'uint256' },
          ],
          outputs: [{ name: '', type: 'bool' }],
        },
      ]),
      abiFunction: 'transfer',
      functionArgs: JSON.stringify([ADDRESS, amount]),
    },
  },
});
const graphOf = (step: object & { id: string }) => ({ nodes: [trigger, step], edges: [{ id: 'e0', source: 'trigger', target: step.id }] });

async function listed(name: string, step: object & { id: string }, listing: Record<string, unknown>) {
  const made = await api('/api/workflows/create', 'POST', { name, ...graphOf(step) });
  expect(made.status, JSON.stringify(made.body)).toBeLessThan(300);
  const published = await api(`/api/workflows/${made.body.id}/listing`, 'POST', {
    description: name,
    price: null,
    inputSchema: { type: 'object' },
    ...listing,
  });
  expect(published.status, JSON.stringify(published.body)).toBe(200);
  return made.body.id as string;
}

describe('a listed workflow', () => {
  it('keeps its result node: removing it is refused and nothing is saved; after unlisting it is saved', async () => {
    const id = await listed('Guarded greeter', greet('greet'), { slug: 'guarded-greeter', result: { nodeId: 'greet', path: '' } });
    const refused = await api(`/api/workflows/${id}`, 'PATCH', graphOf(greet('other')));
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('invalid_workflow');
    expect(refused.body.listing).toBe('guarded-greeter');
    expect(refused.body.error).toContain('"guarded-greeter"');
    expect(refused.body.error).toContain('result.nodeId greet');
    expect(refused.body.error).toContain(`DELETE /api/workflows/${id}/listing`);
    expect((await api(`/api/workflows/${id}`)).body.nodes.map((n: { id: string }) => n.id)).toEqual(['trigger', 'greet']);
    const call = await fetchJson(`${gw.url}/api/mcp/workflows/guarded-greeter/call`, { method: 'POST', body: '{}' });
    expect(call.status).toBe(200);
    expect(JSON.stringify(call.body.output.result)).toContain('hi');

    // Changes that keep the listing whole, and changes to anything but the graph, go through.
    expect((await api(`/api/workflows/${id}`, 'PATCH', { name: 'Renamed greeter' })).status).toBe(200);
    const relabelled = { ...greet('greet'), data: { ...greet('greet').data, label: 'Say hi' } };
    expect((await api(`/api/workflows/${id}`, 'PATCH', graphOf(relabelled))).status).toBe(200);

    expect((await api(`/api/workflows/${id}/listing`, 'DELETE')).status).toBe(200);
    expect((await api(`/api/workflows/${id}`, 'PATCH', graphOf(greet('other')))).status).toBe(200);
  });

  it('of type write keeps a contract-write node: replacing it is refused; changing its arguments is not', async () => {
    const id = await listed('Guarded payment', transfer('1000'), { slug: 'guarded-payment', type: 'write' });
    const refused = await api(`/api/workflows/${id}`, 'PATCH', graphOf(greet('greet')));
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ code: 'invalid_workflow', listing: 'guarded-payment' });
    expect(refused.body.error).toContain('web3/write-contract');
    const calldata = await fetchJson(`${gw.url}/api/mcp/workflows/guarded-payment/call`, { method: 'POST', body: '{}' });
    expect(calldata.status).toBe(200);
    expect(calldata.body.type).toBe('calldata');
    expect((await api(`/api/workflows/${id}`, 'PATCH', graphOf(transfer('2000')))).status).toBe(200);
  });
});

describe('publishing and disabling at the same moment', () => {
  it('one of the two wins and the other is refused: never a disabled workflow left listed', async () => {
    // Before, on PostgreSQL every pair both succeeded: a disabled workflow went on being offered (calls answered 410).
    for (let i = 0; i < 12; i++) {
      const made = await api('/api/workflows/create', 'POST', { name: `Raced ${i}`, ...graphOf(greet('greet')) });
      const id = made.body.id as string;
      const [published, disabled] = await Promise.all([
        api(`/api/workflows/${id}/listing`, 'POST', { slug: `raced-${i}`, description: 'raced', price: null, inputSchema: { type: 'object' } }),
        api(`/api/workflows/${id}`, 'PATCH', { enabled: false }),
      ]);
      // Exactly one goes through; the other answers 409 naming the field.
      expect([published.status, disabled.status].sort(), JSON.stringify([published.body, disabled.body])).toEqual([200, 409]);
      const loser = published.status === 409 ? published : disabled;
      expect(loser.body).toMatchObject({ code: 'conflict', field: 'enabled' });
      const workflow = (await api(`/api/workflows/${id}`)).body as { enabled: boolean };
      const listing = await fetchJson(`${gw.url}/api/mcp/workflows/raced-${i}`);
      expect(workflow.enabled && listing.status === 200 ? 'listed' : !workflow.enabled && listing.status === 404 ? 'disabled' : 'both').not.toBe('both');
    }
  }, 60_000);
});
