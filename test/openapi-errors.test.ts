import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';

/**
 * /openapi.json lists, for each operation, the error answers it gives: a client generated from it must not meet
 * a status the document never named. Each case makes the gateway answer an error, then looks the status and the
 * code up in the document under that operation.
 */

let gw: TestGateway;
let doc: { paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>> };

beforeAll(async () => {
  gw = await startTestGateway();
  doc = (await fetchJson(`${gw.url}/openapi.json`)).body;
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

const api = (path: string, init: RequestInit = {}) => fetchJson(`${gw.url}${path}`, { key: gw.ownerKey, ...init });

/** The answer was an error the document lists for the operation, by status and by code. */
function expectDeclared(template: string, method: string, answer: { status: number; body: { code?: string } }) {
  const declared = doc.paths[template]?.[method]?.responses[String(answer.status)];
  expect(declared, `${method.toUpperCase()} ${template} answered ${answer.status} ${answer.body.code}, which /openapi.json does not list`).toBeDefined();
  expect(declared!.description).toContain(`\`${answer.body.code}\``);
}

describe('/openapi.json names the errors operations answer', () => {
  it('404 for an unknown id, 409 for deleting a workflow with runs, 413 for a body too large, 415 for a body that is not JSON', async () => {
    expectDeclared('/api/workflows/{workflowId}', 'get', await api('/api/workflows/no-such-workflow'));

    const created = await api('/api/workflows/create', {
      method: 'POST',
      body: JSON.stringify({ name: 'has runs', nodes: [{ id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } }], edges: [] }),
    });
    const run = await api(`/api/workflows/${created.body.id}/execute`, { method: 'POST', body: '{}' });
    await api(`/api/workflows/executions/${run.body.executionId}/wait`);
    const refused = await api(`/api/workflows/${created.body.id}`, { method: 'DELETE' });
    expect(refused.status).toBe(409);
    expectDeclared('/api/workflows/{workflowId}', 'delete', refused);

    const tooLarge = await api(`/api/workflows/${created.body.id}/execute`, {
      method: 'POST',
      body: JSON.stringify({ input: { blob: 'x'.repeat(1_100_000) } }),
    });
    expect(tooLarge.status).toBe(413);
    expectDeclared('/api/workflows/{workflowId}/execute', 'post', tooLarge);

    const notJson = await fetchJson(`${gw.url}/api/projects`, { method: 'POST', key: gw.ownerKey, headers: { 'content-type': 'text/plain' }, body: 'name=x' });
    expect(notJson.status).toBe(415);
    expectDeclared('/api/projects', 'post', notJson);
  });

  it('409 for an idempotency key reused with another body', async () => {
    const created = await api('/api/workflows/create', {
      method: 'POST',
      body: JSON.stringify({ name: 'keyed', nodes: [{ id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } }], edges: [] }),
    });
    const run = (input: unknown) =>
      api(`/api/workflows/${created.body.id}/execute`, { method: 'POST', headers: { 'idempotency-key': 'same-key' }, body: JSON.stringify({ input }) });
    expect((await run({ n: 1 })).status).toBe(200);
    const reused = await run({ n: 2 });
    expect(reused.status).toBe(409);
    expectDeclared('/api/workflows/{workflowId}/execute', 'post', reused);
    // The header itself is documented, with the bound the gateway enforces, on the operations that read it and no others.
    const keyed = Object.entries(
      doc.paths as unknown as Record<string, Record<string, { parameters?: { name: string; in: string; schema: { maxLength: number } }[] }>>,
    )
      .flatMap(([path, ops]) =>
        Object.entries(ops).map(
          ([method, op]) => [`${method.toUpperCase()} ${path}`, op.parameters?.find((p) => p.in === 'header' && p.name === 'Idempotency-Key')] as const,
        ),
      )
      .filter(([, header]) => header);
    expect(keyed.map(([name]) => name).sort()).toEqual([
      'POST /api/execute/check-and-execute',
      'POST /api/execute/contract-call',
      'POST /api/execute/node',
      'POST /api/execute/transfer',
      'POST /api/organization/wallet/withdraw',
      'POST /api/workflows/{workflowId}/execute',
      'POST /api/workflows/{workflowId}/webhook',
    ]);
    const maxLength = keyed[0]![1]!.schema.maxLength;
    const tooLong = await api(`/api/workflows/${created.body.id}/execute`, {
      method: 'POST',
      headers: { 'idempotency-key': 'k'.repeat(maxLength + 1) },
      body: '{}',
    });
    expect(tooLong.status).toBe(400);
    expect(
      (await api(`/api/workflows/${created.body.id}/execute`, { method: 'POST', headers: { 'idempotency-key': 'k'.repeat(maxLength) }, body: '{}' })).status,
    ).toBe(200);
  });

  it('the conflicts and refusals of tags, listings, workflows and the ABI lookup, each with its code', async () => {
    const tag = await api('/api/tags', { method: 'POST', body: JSON.stringify({ name: 'dup', color: '#3b82f6' }) });
    const again = await api('/api/tags', { method: 'POST', body: JSON.stringify({ name: 'dup', color: '#3b82f6' }) });
    expect(again.status).toBe(409);
    expectDeclared('/api/tags', 'post', again);
    const other = await api('/api/tags', { method: 'POST', body: JSON.stringify({ name: 'other', color: '#3b82f6' }) });
    const renamed = await api(`/api/tags/${other.body.id}`, { method: 'PATCH', body: JSON.stringify({ name: tag.body.name }) });
    expect(renamed.status).toBe(409);
    expectDeclared('/api/tags/{tagId}', 'patch', renamed);

    const workflow = async (name: string) =>
      (
        await api('/api/workflows/create', {
          method: 'POST',
          body: JSON.stringify({ name, nodes: [{ id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } }], edges: [] }),
        })
      ).body.id as string;
    const [first, second] = [await workflow('listed'), await workflow('second')];
    const notListed = await api(`/api/workflows/${first}/listing`, { method: 'DELETE' });
    expect(notListed.status).toBe(404);
    expectDeclared('/api/workflows/{workflowId}/listing', 'delete', notListed);
    const listing = { slug: 'errors-doc', description: 'x', price: null, inputSchema: { type: 'object' } };
    expect((await api(`/api/workflows/${first}/listing`, { method: 'POST', body: JSON.stringify(listing) })).status).toBe(200);
    const taken = await api(`/api/workflows/${second}/listing`, { method: 'POST', body: JSON.stringify(listing) });
    expect(taken.status).toBe(409);
    expectDeclared('/api/workflows/{workflowId}/listing', 'post', taken);
    const disable = await api(`/api/workflows/${first}`, { method: 'PATCH', body: JSON.stringify({ enabled: false }) });
    expect(disable.status).toBe(409);
    expectDeclared('/api/workflows/{workflowId}', 'patch', disable);

    const noChain = await api(`/api/chains/999999/abi?address=0x${'1'.repeat(40)}`);
    expect(noChain.status).toBe(404);
    expectDeclared('/api/chains/{chainId}/abi', 'get', noChain);
    const badAddress = await api('/api/chains/8453/abi?address=0x12');
    expect(badAddress.status).toBe(400);
    expectDeclared('/api/chains/{chainId}/abi', 'get', badAddress);
  });
});
