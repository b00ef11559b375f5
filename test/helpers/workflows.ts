import type { Store } from '../../src/store/db.ts';
import { newId, nowIso } from '../../src/ids.ts';
import { fetchJson } from './gateway.ts';

/** A small valid graph: Manual trigger → balance check, with the action given as a plugin slug. */
export function balanceGraph(address = '0x000000000000000000000000000000000000dEaD') {
  return {
    nodes: [
      { id: 'trigger', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
      { id: 'balance', type: 'web3/check-balance', data: { label: 'Balance', config: { network: '8453', address } } },
    ],
    edges: [{ id: 'e1', source: 'trigger', target: 'balance' }],
  };
}

export async function createWorkflowViaApi(url: string, key: string, body: Record<string, unknown> = {}) {
  const res = await fetchJson(`${url}/api/workflows/create`, {
    method: 'POST',
    key,
    body: JSON.stringify({ name: 'Balance check', ...balanceGraph(), ...body }),
  });
  if (res.status !== 200) throw new Error(`create failed ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as { id: string; [k: string]: any };
}

/** Execution history rows (the engine that writes them arrives later); logs hang off the execution. */
export async function insertExecution(store: Store, workflowId: string, organizationId: string) {
  const id = newId();
  await store
    .insertInto('workflow_executions')
    .values({
      id,
      workflow_id: workflowId,
      organization_id: organizationId,
      user_id: null,
      status: 'success',
      input: '{}',
      output: '{}',
      error: null,
      created_at: nowIso(),
      started_at: nowIso(),
      completed_at: nowIso(),
    })
    .execute();
  await store
    .insertInto('workflow_execution_logs')
    .values({
      id: newId(),
      execution_id: id,
      node_id: 'trigger',
      node_name: 'Start',
      node_type: 'trigger',
      status: 'success',
      input: '{}',
      output: '{}',
      error: null,
      started_at: nowIso(),
      completed_at: nowIso(),
      duration_ms: 1,
    })
    .execute();
  return id;
}
