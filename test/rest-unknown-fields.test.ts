import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';

/**
 * REST bodies are held to their operation's fields, as MCP arguments already
 * were: before, a misspelled field was dropped without a word, and a transfer
 * with `tokenAdress` sent the native coin instead of the token. And
 * execute_workflow's `idempotency_key` body field, which /openapi.json
 * advertised, now makes retries safe as the header does.
 */

let gw: TestGateway;
const api = (path: string, init: { method?: string; body?: unknown; key?: string | null; headers?: Record<string, string> } = {}) =>
  fetchJson(`${gw.url}${path}`, {
    method: init.method ?? 'GET',
    ...(init.key === null ? {} : { key: init.key ?? gw.ownerKey }),
    ...(init.headers ? { headers: init.headers } : {}),
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });

const manualWorkflow = { name: 'fields', nodes: [{ id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } }], edges: [] };

beforeAll(async () => {
  gw = await startTestGateway();
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

describe('an unknown REST body field', () => {
  it('refuses a transfer with a misspelled token field, naming the field it meant, and records nothing', async () => {
    const { store } = gw.gateway.services;
    const count = async () =>
      Number(
        (
          await store
            .selectFrom('direct_executions')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = await count();
    const res = await api('/api/execute/transfer', {
      method: 'POST',
      body: {
        chainId: 31337,
        recipientAddress: '0x000000000000000000000000000000000000bEEF',
        amount: '0.001',
        tokenAdress: '0xE265742E68d44961E86382D2265d9f2B191F629a',
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.code).toBe('invalid_input');
    expect(res.body.error).toContain('"tokenAdress" (did you mean "tokenAddress"?)');
    expect(res.body.issues).toEqual([expect.objectContaining({ path: 'tokenAdress', suggestion: 'tokenAddress' })]);
    expect(await count()).toBe(before);

    const keyInBody = await api('/api/execute/transfer', {
      method: 'POST',
      body: { chainId: 31337, recipientAddress: '0x000000000000000000000000000000000000bEEF', amount: '0.001', idempotency_key: 'k' },
    });
    expect(keyInBody.status).toBe(400);
    expect(keyInBody.body.error).toContain('send it as the Idempotency-Key header');
  });

  it('refuses misspelled fields on create and update, and saves nothing', async () => {
    const project = await api('/api/projects', { method: 'POST', body: { name: 'typo', descripton: 'x' } });
    expect(project.status).toBe(400);
    expect(project.body.error).toContain('did you mean "description"?');
    expect((await api('/api/projects')).body.map((p: { name: string }) => p.name)).not.toContain('typo');

    const created = await api('/api/workflows/create', { method: 'POST', body: manualWorkflow });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const renamed = await api(`/api/workflows/${created.body.id}`, { method: 'PATCH', body: { nme: 'renamed' } });
    expect(renamed.status).toBe(400);
    expect(renamed.body.error).toContain('"nme" (did you mean "name"?)');
  });

  it('still takes a downloaded workflow back unchanged, over REST and MCP', async () => {
    const created = await api('/api/workflows/create', { method: 'POST', body: manualWorkflow });
    const portable = (await api(`/api/workflows/${created.body.id}/download`)).body;
    expect(portable).toHaveProperty('format');
    expect(portable).toHaveProperty('exportedAt');
    const again = await api('/api/workflows/create', { method: 'POST', body: portable });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    const client = await connectMcp(gw.url, gw.ownerKey);
    try {
      const overMcp = await callTool(client, 'create_workflow', portable);
      expect(overMcp.isError, JSON.stringify(overMcp.body)).toBe(false);
      expect(overMcp.body.name).toBe(portable.name);
    } finally {
      await client.close();
    }
  });

  it('is answered 401 before 400 for a caller without a key', async () => {
    const res = await api('/api/projects', { method: 'POST', key: null, body: { name: 'x', descripton: 'x' } });
    expect(res.status).toBe(401);
  });
});

describe("execute_workflow's idempotency key", () => {
  it('makes a retry with the body field return the first run, under the header’s rule', async () => {
    const created = await api('/api/workflows/create', { method: 'POST', body: manualWorkflow });
    const run = (body: unknown, headers?: Record<string, string>) => api(`/api/workflows/${created.body.id}/execute`, { method: 'POST', body, headers });
    const first = await run({ idempotency_key: 'retry-me' });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const retry = await run({ idempotency_key: 'retry-me' });
    expect(retry.body).toMatchObject({ executionId: first.body.executionId, idempotentReplay: true });
    // The header and the field are one key.
    expect((await run({}, { 'idempotency-key': 'retry-me' })).body.executionId).toBe(first.body.executionId);

    const tooLong = await run({ idempotency_key: 'k'.repeat(256) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.code).toBe('invalid_idempotency_key');
    const blankHeader = await run({}, { 'idempotency-key': '   ' });
    expect(blankHeader.status).toBe(400);
    expect(blankHeader.body.code).toBe('invalid_idempotency_key');
    const twoKeys = await run({ idempotency_key: 'a' }, { 'idempotency-key': 'b' });
    expect(twoKeys.status).toBe(400);
    expect(twoKeys.body.code).toBe('invalid_idempotency_key');
  });
});
