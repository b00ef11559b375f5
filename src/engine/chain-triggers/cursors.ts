import type { PublicClient } from 'viem';
import type { Services } from '../../services.ts';
import type { Store } from '../../store/db.ts';
import { nowIso } from '../../ids.ts';
import type { WorkflowRecord } from '../workflows.ts';
import { compactEvent, readChainTrigger, type ChainTriggerSpec } from './trigger-spec.ts';

/**
 * The per-workflow cursor of a chain trigger: the last block whose
 * occurrences became runs. Kept in step with saved workflows like the
 * schedule row (syncChainTrigger after create, update, enable, disable,
 * claim; deleting a workflow cascades), and advanced only with
 * compare-and-swap so two processes never both move it.
 *
 * Policy: a new or changed trigger starts at the chain head of the moment it
 * is saved (no history is replayed); a workflow that is disabled loses its
 * cursor, so re-enabling starts at the head again. A restart resumes from the
 * cursor, so blocks mined while the gateway was down still fire.
 */

/** A save must not hang on a slow RPC: past this, the watcher starts at the head it first sees. */
const HEAD_AT_SAVE_TIMEOUT_MS = 3000;

/** The chain head, read fresh (viem caches block numbers by default). */
export async function chainHead(client: PublicClient): Promise<number> {
  return Number(await client.getBlockNumber({ cacheTime: 0 }));
}

async function headOrNull(client: PublicClient): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), HEAD_AT_SAVE_TIMEOUT_MS)));
  try {
    return await Promise.race([chainHead(client).catch(() => null), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The spec of an enabled, owned workflow's chain trigger; undefined when it has none. */
export function watchedSpec(workflow: Pick<WorkflowRecord, 'nodes' | 'enabled' | 'organizationId'>, chains: Services['chains']): ChainTriggerSpec | undefined {
  if (!workflow.enabled || !workflow.organizationId) return undefined;
  const trigger = workflow.nodes.find((n) => n.type === 'trigger');
  return trigger ? readChainTrigger(trigger.data.config ?? {}, chains).spec : undefined;
}

/** A stored spec as it is written today (event fragments compacted); older rows kept the ABI's fragments whole. */
function storedForm(text: string): string {
  const spec = JSON.parse(text) as ChainTriggerSpec;
  return JSON.stringify(
    spec.triggerType === 'Event' ? { ...spec, events: spec.events.map((e) => compactEvent(e as unknown as Record<string, unknown>)) } : spec,
  );
}

export async function syncChainTrigger(services: Pick<Services, 'store' | 'chains' | 'chainClients'>, workflow: WorkflowRecord): Promise<void> {
  const { store } = services;
  const spec = watchedSpec(workflow, services.chains);
  if (!spec) {
    await store.deleteFrom('chain_trigger_cursors').where('workflow_id', '=', workflow.id).execute();
    return;
  }
  const text = JSON.stringify(spec);
  const existing = await store.selectFrom('chain_trigger_cursors').select('spec').where('workflow_id', '=', workflow.id).executeTakeFirst();
  if (existing?.spec === text) return; // same trigger: keep its place in the chain
  if (existing && storedForm(existing.spec) === text) {
    // Saved before specs were compacted, and the same trigger: keep its place, store the compact form.
    await store.updateTable('chain_trigger_cursors').set({ spec: text }).where('workflow_id', '=', workflow.id).where('spec', '=', existing.spec).execute();
    return;
  }
  const head = await headOrNull(services.chainClients.publicClient(spec.chainId));
  const row = {
    workflow_id: workflow.id,
    organization_id: workflow.organizationId!,
    chain_id: spec.chainId,
    spec: text,
    last_block: head,
    updated_at: nowIso(),
  };
  await store
    .insertInto('chain_trigger_cursors')
    .values(row)
    .onConflict((oc) =>
      oc.column('workflow_id').doUpdateSet({ chain_id: row.chain_id, spec: row.spec, last_block: row.last_block, updated_at: row.updated_at }),
    )
    .execute();
}

/**
 * Moves a cursor from `from` to `to` only if nobody moved it (or re-saved the
 * trigger) meanwhile; false when another process or a save got there first.
 */
export async function advanceCursor(store: Store, cursor: { workflowId: string; spec: string; from: number | null }, to: number): Promise<boolean> {
  const result = await store
    .updateTable('chain_trigger_cursors')
    .set({ last_block: to, updated_at: nowIso() })
    .where('workflow_id', '=', cursor.workflowId)
    .where('spec', '=', cursor.spec)
    .where('last_block', cursor.from === null ? 'is' : '=', cursor.from)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
