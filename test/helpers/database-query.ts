import { expect } from 'vitest';
import { fetchJson, type TestGateway } from './gateway.ts';

/**
 * Runs `dbQuery` as a workflow's one Database Query step (node `q`) against the integration, with the
 * owner's key, and answers the finished run and the step's log.
 */
export async function runDatabaseQuery(gw: TestGateway, integrationId: string, dbQuery: string, input: Record<string, unknown> = {}) {
  const api = (p: string, init: Parameters<typeof fetchJson>[1] = {}) => fetchJson(`${gw.url}${p}`, { key: gw.ownerKey, ...init });
  const created = await api('/api/workflows/create', {
    method: 'POST',
    body: JSON.stringify({
      name: 'Query',
      nodes: [
        { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
        { id: 'q', type: 'action', data: { label: 'Query', config: { actionType: 'Database Query', integrationId, dbQuery } } },
      ],
      edges: [{ source: 't', target: 'q' }],
    }),
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const started = await api(`/api/workflows/${created.body.id}/execute`, { method: 'POST', body: JSON.stringify({ input }) });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const done = (await api(`/api/workflows/executions/${started.body.executionId}/wait`)).body;
  const logs = (await api(`/api/workflows/executions/${started.body.executionId}/logs`)).body.logs;
  return { done, log: logs.find((l: { nodeId: string }) => l.nodeId === 'q') };
}
