import { sql } from 'kysely';
import { z } from 'zod';
import type { ChainCatalog } from '../chains/catalog.ts';
import { badRequest } from '../errors.ts';
import type { Store } from '../store/db.ts';
import type { Window } from './range.ts';
import { directRunStatus, STATUS_MATCHES, type StatusFilter } from './statuses.ts';

/**
 * SPEC "Analytics run row": workflow runs and direct executions in one list,
 * newest first, paged by an opaque cursor. The order is the keyset
 * (createdAt, id) descending, and a page continues strictly after the
 * previous page's last row, so runs written while a client pages land
 * before its first page and never shift, repeat or hide rows of later
 * pages. The cursor also keeps the first page's window start, so a relative
 * range (30d) does not slide between pages.
 */

const workflowRunSchema = z.object({
  id: z.string(),
  source: z.literal('workflow'),
  workflowId: z.string(),
  workflowName: z.string().nullable(),
  status: z.string(),
  createdAt: z.string(),
  completedAt: z.string().nullable(),
  durationMs: z.number().nullable(),
});
const directRunSchema = z.object({
  id: z.string(),
  source: z.literal('direct'),
  type: z.string(),
  network: z.string(),
  status: z.string(),
  transactionHash: z.string().nullable(),
  gasUsedWei: z.string().nullable(),
  createdAt: z.string(),
  completedAt: z.string().nullable(),
});
export const runRowSchema = z.discriminatedUnion('source', [workflowRunSchema, directRunSchema]);
export type RunRow = z.output<typeof runRowSchema>;
export const runsPageSchema = z.object({ runs: z.array(runRowSchema), nextCursor: z.string().nullable() });

export interface RunsQuery {
  status?: StatusFilter;
  source?: 'workflow' | 'direct';
  limit: number;
  cursor?: string;
}

interface Position {
  createdAt: string;
  id: string;
  /** The window start of the listing's first page. */
  since: string;
}

const encodeCursor = (p: Position) => Buffer.from(JSON.stringify([p.createdAt, p.id, p.since])).toString('base64url');

function decodeCursor(cursor: string): Position {
  try {
    const [createdAt, id, since] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (
      typeof createdAt === 'string' &&
      typeof id === 'string' &&
      typeof since === 'string' &&
      !Number.isNaN(Date.parse(createdAt)) &&
      !Number.isNaN(Date.parse(since))
    )
      return { createdAt, id, since };
  } catch {
    // Falls through to the one answer for anything that is not our cursor.
  }
  throw badRequest('invalid_input', 'cursor is not a cursor this endpoint returned; pass nextCursor from the previous page unchanged.', {
    issues: [{ path: 'cursor', message: 'unknown cursor', code: 'custom' }],
  });
}

/** Newest first, ties by id; both sources sort the same way, so their pages merge. */
const newerFirst = (a: RunRow, b: RunRow) => (a.createdAt === b.createdAt ? (a.id < b.id ? 1 : a.id > b.id ? -1 : 0) : a.createdAt < b.createdAt ? 1 : -1);

const durationMs = (from: string | null, to: string | null) => (from && to ? Date.parse(to) - Date.parse(from) : null);

export async function listRuns(store: Store, chains: ChainCatalog, organizationId: string, window: Window, query: RunsQuery) {
  const after = query.cursor ? decodeCursor(query.cursor) : undefined;
  const since = after?.since ?? window.since;
  const take = query.limit + 1;
  const statuses = query.status ? STATUS_MATCHES[query.status] : undefined;
  // Both sources: each gives at most limit+1 rows past the cursor; the merged newest limit+1 decide the page.
  const keyset = (column: (name: 'created_at' | 'id') => string) =>
    after
      ? sql<boolean>`(${sql.ref(column('created_at'))} < ${after.createdAt} or (${sql.ref(column('created_at'))} = ${after.createdAt} and ${sql.ref(column('id'))} < ${after.id}))`
      : sql<boolean>`1 = 1`;

  const workflowRuns: Promise<RunRow[]> =
    query.source === 'direct'
      ? Promise.resolve([])
      : store
          .selectFrom('workflow_executions as e')
          .leftJoin('workflows as w', 'w.id', 'e.workflow_id')
          .select(['e.id', 'e.workflow_id', 'w.name', 'e.status', 'e.created_at', 'e.started_at', 'e.completed_at'])
          .where('e.organization_id', '=', organizationId)
          .where('e.created_at', '>=', since)
          .where('e.created_at', '<', window.until)
          .$if(statuses !== undefined, (q) => q.where('e.status', 'in', [...statuses!.workflow]))
          .where(keyset((name) => `e.${name}`))
          .orderBy('e.created_at', 'desc')
          .orderBy('e.id', 'desc')
          .limit(take)
          .execute()
          .then((rows) =>
            rows.map((r) => ({
              id: r.id,
              source: 'workflow' as const,
              workflowId: r.workflow_id,
              workflowName: r.name ?? null,
              status: r.status,
              createdAt: r.created_at,
              completedAt: r.completed_at,
              durationMs: durationMs(r.started_at, r.completed_at),
            })),
          );
  const directRuns: Promise<RunRow[]> =
    query.source === 'workflow'
      ? Promise.resolve([])
      : store
          .selectFrom('direct_executions')
          .select(['id', 'type', 'chain_id', 'status', 'transaction_hash', 'gas_used_wei', 'created_at', 'completed_at'])
          .where('organization_id', '=', organizationId)
          .where('created_at', '>=', since)
          .where('created_at', '<', window.until)
          .$if(statuses !== undefined, (q) => q.where('status', 'in', [...statuses!.direct]))
          .where(keyset((name) => name))
          .orderBy('created_at', 'desc')
          .orderBy('id', 'desc')
          .limit(take)
          .execute()
          .then((rows) =>
            rows.map((r) => ({
              id: r.id,
              source: 'direct' as const,
              type: r.type,
              network: chains.get(r.chain_id)?.id ?? String(r.chain_id),
              status: directRunStatus(r.status),
              // As on the direct execution record: a hash is shown once the transaction counted (or is being confirmed).
              transactionHash: r.transaction_hash && (r.status === 'completed' || r.status === 'unconfirmed') ? r.transaction_hash : null,
              gasUsedWei: r.gas_used_wei,
              createdAt: r.created_at,
              completedAt: r.completed_at,
            })),
          );

  const merged = [...(await workflowRuns), ...(await directRuns)].sort(newerFirst);
  const runs = merged.slice(0, query.limit);
  const last = runs[runs.length - 1];
  return { runs, nextCursor: merged.length > query.limit && last ? encodeCursor({ createdAt: last.createdAt, id: last.id, since }) : null };
}
