import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrate, openSqliteStore, type Store } from '../src/store/db.ts';
import { listLogs } from '../src/engine/executions.ts';
import { MAX_HELD, RunLog } from '../src/engine/run-log.ts';
import { tempDir } from './helpers/gateway.ts';

/** The run log's batching: what is committed when, and in which order. */

let store: Store;
const executionId = 'exec-1';
const entry = (nodeId: string, iterationIndex: number | null = null) => ({
  executionId,
  nodeId,
  nodeName: nodeId,
  nodeType: 'math/aggregate',
  input: { i: iterationIndex },
  iterationIndex,
  forEachNodeId: iterationIndex === null ? null : 'loop',
});
const stored = async () => (await listLogs(store, executionId)).reverse();
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

beforeEach(async () => {
  store = openSqliteStore(path.join(tempDir(), 'db.sqlite'));
  await migrate(store);
  await store.insertInto('organizations').values({ id: 'org', slug: 'org', name: 'Org', created_at: new Date().toISOString() }).execute();
  await store
    .insertInto('workflows')
    .values({
      id: 'wf',
      organization_id: 'org',
      user_id: null,
      name: 'W',
      description: null,
      visibility: 'private',
      nodes: '[]',
      edges: '[]',
      project_id: null,
      tag_id: null,
      enabled: 1,
      claim_token_hash: null,
      featured: 0,
      featured_category: null,
      featured_protocol: null,
      featured_order: null,
      published_at: null,
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
    })
    .execute();
  await store
    .insertInto('workflow_executions')
    .values({
      id: executionId,
      workflow_id: 'wf',
      organization_id: 'org',
      user_id: null,
      status: 'running',
      input: '{}',
      output: null,
      error: null,
      created_at: new Date().toISOString(),
      started_at: null,
      completed_at: null,
    })
    .execute();
});
afterEach(async () => {
  await store.destroy();
});

describe('RunLog', () => {
  it('holds rows of contained steps until the next turn of the event loop, then commits them in order', async () => {
    const log = new RunLog(store);
    for (let i = 0; i < 5; i++) await log.finishedStep(entry('m', i), 'success', { success: true, i }, null, Date.now(), true);
    expect(await stored()).toEqual([]);
    await nextTurn();
    await log.flush();
    expect((await stored()).map((l) => l.iterationIndex)).toEqual([0, 1, 2, 3, 4]);
  });

  it(`commits at once when ${MAX_HELD} rows are held, and keeps every row in logging order`, async () => {
    const log = new RunLog(store);
    const count = MAX_HELD * 2 + 7;
    for (let i = 0; i < count; i++) {
      await log.finishedStep(entry('m', i), 'success', { success: true, i }, null, Date.now(), true);
      // Without yielding to the event loop, at most MAX_HELD rows are ever uncommitted.
      expect((await stored()).length).toBeGreaterThanOrEqual(i + 1 - MAX_HELD);
    }
    await log.flush();
    const rows = await stored();
    expect(rows.map((l) => l.iterationIndex)).toEqual(Array.from({ length: count }, (_, i) => i));
    expect(rows.every((l) => l.status === 'success' && l.forEachNodeId === 'loop')).toBe(true);
    expect(rows.map((l) => (l.output as { i: number }).i)).toEqual(Array.from({ length: count }, (_, i) => i));
  });

  it('commits everything held before a step that may act outside the engine starts, and that step shows as running', async () => {
    const log = new RunLog(store);
    await log.finishedStep(entry('t'), 'success', { success: true }, null, Date.now(), true);
    await log.finishedStep(entry('c'), 'success', { success: true }, null, Date.now(), true);
    const id = await log.started({ ...entry('http'), nodeType: 'HTTP Request' });
    expect((await stored()).map((l) => [l.nodeId, l.status])).toEqual([
      ['t', 'success'],
      ['c', 'success'],
      ['http', 'running'],
    ]);
    // Its end is committed at once too.
    await log.finished(id, 'success', { success: true }, null, Date.now(), false);
    expect((await stored()).at(-1)).toMatchObject({ nodeId: 'http', status: 'success', output: { success: true } });
  });

  it('commits the held rows and the final statement in one transaction', async () => {
    const log = new RunLog(store);
    await log.finishedStep(entry('m'), 'success', { success: true }, null, Date.now(), true);
    const seen = await log.flush(
      async (trx) => (await trx.selectFrom('workflow_execution_logs').select('node_id').where('execution_id', '=', executionId).execute()).length,
    );
    expect(seen).toBe(1);
    expect((await stored()).map((l) => l.nodeId)).toEqual(['m']);
  });

  it('reports a failed commit to the run instead of leaving a silent gap', async () => {
    const log = new RunLog(store);
    await log.finishedStep({ ...entry('m'), executionId: 'no-such-execution' }, 'success', { success: true }, null, Date.now(), true);
    await expect(log.flush()).rejects.toThrow(/FOREIGN KEY/);
    await expect(log.finishedStep(entry('n'), 'success', { success: true }, null, Date.now(), false)).rejects.toThrow(/FOREIGN KEY/);
  });
});
