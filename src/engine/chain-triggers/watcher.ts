import { BaseError, type PublicClient } from 'viem';
import type { Services } from '../../services.ts';
import { isUniqueViolation } from '../../store/db.ts';
import { createExecution } from '../executions.ts';
import { DROPPED, triggerAdmission } from '../trigger-admission.ts';
import { returnSkippedRunSlot } from '../skipped-runs.ts';
import type { WorkflowGraph } from '../graph.ts';
import { createBlockReader, type BlockReader } from './block-reader.ts';
import { blockOccurrences } from './block-occurrences.ts';
import { advanceCursor, chainHead } from './cursors.ts';
import { eventOccurrences } from './event-occurrences.ts';
import type { Occurrence } from './occurrence.ts';
import { nativeTransferOccurrences, tokenTransferOccurrences } from './transfer-occurrences.ts';
import type { ChainTriggerSpec } from './trigger-spec.ts';

/**
 * Polls every chain that has enabled Event, Block or Transfer workflows and
 * turns new occurrences into runs, the chain counterpart of the scheduler.
 *
 * Exactly once: each run is inserted under the unique key (workflow,
 * trigger_occurrence), so a second insert of the same block/log/transfer —
 * by a retry, a restart or another process — fails and is skipped; the
 * cursor then moves with compare-and-swap. A crash between the inserts and
 * the cursor move only means the range is read again and its inserts skipped.
 *
 * Catch-up is bounded: one poll moves a cursor by at most
 * MAX_BLOCKS_PER_POLL, so a long outage is worked off over several polls.
 * A chain whose RPC fails is logged and retried next poll; the other chains
 * go on.
 *
 * Fair share: every watch costs RPC reads of the shared node and a poll's
 * time, so one organization's watches on a chain are polled at most
 * WATCHES_PER_ORG_PER_POLL at a time, those furthest behind first, and the
 * organizations' turns are interleaved. An organization with more watches
 * than that has each polled less often (and catches up over later polls)
 * instead of delaying every other tenant's triggers.
 */

export const MAX_BLOCKS_PER_POLL = 200;
export const WATCHES_PER_ORG_PER_POLL = 20;

export interface ChainTriggerWatcher {
  /** One poll of every watched chain; returns the executions it created. */
  tick(): Promise<string[]>;
  start(): void;
  /** Stops polling and waits for a poll in progress. */
  stop(): Promise<void>;
}

/** A watch as listed every poll: light columns only; its spec is read when it has blocks to read. */
interface Watch {
  workflowId: string;
  organizationId: string;
  userId: string | null;
  lastBlock: number | null;
}

/** viem's short message never carries the RPC URL (its full message does). */
const describe = (error: unknown) => (error instanceof BaseError ? error.shortMessage : error instanceof Error ? error.message : String(error));

export function createChainTriggerWatcher(
  services: Services,
  enqueue: (executionId: string, organizationId: string) => void,
  pollMs: number,
): ChainTriggerWatcher {
  const { store } = services;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<unknown> | undefined;
  let stopped = false;
  /** Chains whose last poll failed: an outage is logged when it starts and when it ends, not on every poll. */
  const failing = new Set<number>();

  /**
   * Every enabled watch, without its spec: a spec (up to 16 KB, or a row saved
   * before that bound, ~200 KB) is read and parsed only for a watch this poll
   * takes and that has blocks to read (readSpec), never for the whole list.
   */
  async function watches(): Promise<Map<number, Watch[]>> {
    const rows = await store
      .selectFrom('chain_trigger_cursors as c')
      .innerJoin('workflows as w', 'w.id', 'c.workflow_id')
      .select(['c.workflow_id', 'c.organization_id', 'c.chain_id', 'c.last_block', 'w.user_id'])
      .where('w.enabled', '=', 1)
      .execute();
    const byChain = new Map<number, Watch[]>();
    for (const row of rows) {
      const watch: Watch = { workflowId: row.workflow_id, organizationId: row.organization_id, userId: row.user_id, lastBlock: row.last_block };
      const list = byChain.get(row.chain_id);
      if (list) list.push(watch);
      else byChain.set(row.chain_id, [watch]);
    }
    return byChain;
  }

  /** The spec and cursor read together, so the range polled and the compare-and-swap are for the same saved trigger. */
  async function readSpec(workflowId: string): Promise<{ spec: ChainTriggerSpec; specText: string; lastBlock: number | null } | undefined> {
    const row = await store.selectFrom('chain_trigger_cursors').select(['spec', 'last_block']).where('workflow_id', '=', workflowId).executeTakeFirst();
    return row && { spec: JSON.parse(row.spec) as ChainTriggerSpec, specText: row.spec, lastBlock: row.last_block };
  }

  function occurrences(client: PublicClient, reader: BlockReader, spec: ChainTriggerSpec, from: number, to: number): Promise<Occurrence[]> {
    switch (spec.triggerType) {
      case 'Event':
        return eventOccurrences(client, services.chains, spec, from, to);
      case 'Block':
        return blockOccurrences(reader, spec.blockInterval, from, to);
      case 'Transfer':
        return spec.tokenAddress
          ? tokenTransferOccurrences(client, spec.tokenAddress, spec.address, from, to)
          : nativeTransferOccurrences(reader, spec.address, from, to);
    }
  }

  /** Inserts one run per occurrence; an occurrence that already has its run is skipped. */
  async function fire(watch: Watch, triggerType: ChainTriggerSpec['triggerType'], found: Occurrence[], skipIfOverBounds: TriggerCheck): Promise<string[]> {
    const created: string[] = [];
    if (found.length === 0) return created;
    // The graph is read only when an occurrence fires (most polls find none): a poll never loads every watched workflow.
    const stored = await store.selectFrom('workflows').select(['nodes', 'edges']).where('id', '=', watch.workflowId).executeTakeFirst();
    if (!stored) return created; // deleted since this poll began
    const graph = { nodes: JSON.parse(stored.nodes), edges: JSON.parse(stored.edges) } as WorkflowGraph;
    for (const occurrence of found) {
      if (stopped) break;
      const skipped = await skipIfOverBounds(watch.organizationId);
      // Past the day's bound on skipped runs: no row, and the cursor moves past it all the same.
      if (skipped === DROPPED) continue;
      try {
        const { id } = await createExecution(store, {
          workflowId: watch.workflowId,
          organizationId: watch.organizationId,
          userId: watch.userId,
          graph,
          input: occurrence.input,
          triggerType,
          triggerOccurrence: occurrence.key,
          skipped,
        });
        created.push(id);
        if (!skipped) enqueue(id, watch.organizationId);
      } catch (error) {
        // Another process wrote this occurrence first: its slot among the day's skipped runs was counted there.
        if (!isUniqueViolation(error)) throw error;
        if (skipped) await returnSkippedRunSlot(store, watch.organizationId);
      }
    }
    return created;
  }

  type TriggerCheck = ReturnType<typeof triggerAdmission>;

  /** This poll's watches of one chain: per organization the WATCHES_PER_ORG_PER_POLL furthest behind, the organizations interleaved. */
  function fairShare(list: Watch[]): Watch[] {
    const byOrganization = new Map<string, Watch[]>();
    for (const watch of list) {
      const own = byOrganization.get(watch.organizationId);
      if (own) own.push(watch);
      else byOrganization.set(watch.organizationId, [watch]);
    }
    const behindFirst = (a: Watch, b: Watch) => (a.lastBlock ?? -1) - (b.lastBlock ?? -1) || a.workflowId.localeCompare(b.workflowId);
    const shares = [...byOrganization.values()].map((own) => own.sort(behindFirst).slice(0, WATCHES_PER_ORG_PER_POLL));
    const order: Watch[] = [];
    for (let i = 0; i < WATCHES_PER_ORG_PER_POLL; i++) for (const share of shares) if (share[i]) order.push(share[i]!);
    return order;
  }

  async function pollWatch(client: PublicClient, reader: BlockReader, head: number, watch: Watch, skipIfOverBounds: TriggerCheck): Promise<string[]> {
    // Nothing mined since its cursor: no spec to read (most polls of a quiet chain).
    if (watch.lastBlock !== null && watch.lastBlock >= head) return [];
    const stored = await readSpec(watch.workflowId);
    if (!stored) return []; // disabled or deleted since the list was read
    const cursor = { workflowId: watch.workflowId, spec: stored.specText, from: stored.lastBlock };
    // The head could not be read when the trigger was saved: start here.
    if (stored.lastBlock === null) {
      await advanceCursor(store, cursor, head);
      return [];
    }
    const from = stored.lastBlock + 1;
    const to = Math.min(head, stored.lastBlock + MAX_BLOCKS_PER_POLL);
    if (from > to) return [];
    const created = await fire(watch, stored.spec.triggerType, await occurrences(client, reader, stored.spec, from, to), skipIfOverBounds);
    // Stopped mid-range: leave the cursor; the next start reads the range again and skips what ran.
    if (!stopped) await advanceCursor(store, cursor, to);
    return created;
  }

  async function pollChain(chainId: number, list: Watch[], skipIfOverBounds: TriggerCheck): Promise<string[]> {
    const client = services.chainClients.publicClient(chainId);
    const head = await chainHead(client);
    const reader = createBlockReader(client);
    const created: string[] = [];
    for (const watch of fairShare(list)) {
      if (stopped) break;
      try {
        created.push(...(await pollWatch(client, reader, head, watch, skipIfOverBounds)));
      } catch (error) {
        // One workflow's failure (a node refusing a log range, say) does not hold back the others.
        console.error(`[flowgate] chain trigger of workflow ${watch.workflowId} on chain ${chainId} failed, retrying next poll: ${describe(error)}`);
      }
    }
    return created;
  }

  async function tick(): Promise<string[]> {
    const byChain = await watches();
    const skipIfOverBounds = triggerAdmission(store, services.config.engine);
    const results = await Promise.allSettled([...byChain].map(([chainId, list]) => pollChain(chainId, list, skipIfOverBounds)));
    const created: string[] = [];
    const chainIds = [...byChain.keys()];
    results.forEach((result, i) => {
      const chainId = chainIds[i];
      if (result.status === 'fulfilled') {
        created.push(...result.value);
        if (failing.delete(chainId)) console.error(`[flowgate] chain ${chainId} reachable again; chain triggers catch up from their cursors`);
      } else if (!failing.has(chainId)) {
        failing.add(chainId);
        console.error(`[flowgate] chain ${chainId} could not be polled for triggers, retrying every poll: ${describe(result.reason)}`);
      }
    });
    return created;
  }

  return {
    tick,
    start() {
      stopped = false;
      timer = setInterval(() => {
        if (inFlight) return;
        inFlight = tick()
          .catch((error) => console.error('[flowgate] chain trigger poll failed:', describe(error)))
          .finally(() => (inFlight = undefined));
      }, pollMs);
      timer.unref();
    },
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      await inFlight;
    },
  };
}
