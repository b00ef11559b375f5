/**
 * Analytics with 1,000,000 stored runs (issue "See what runs", scale check):
 * p50/p99 of each analytics route, one client at a time, so the figures are
 * what a dashboard request waits, not queueing behind other load. The runs
 * are written straight into the store of a gateway on a temporary database
 * (batched inserts in one transaction): 800,000 workflow executions over 50
 * workflows and 200,000 direct executions, spread over the last 90 days, all
 * in one organization, the worst case for a per-organization index.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.ts';
import { createGateway } from '../src/gateway.ts';
import { newId, newSortableId } from '../src/ids.ts';
import { sessionCookieName } from '../src/auth/session-cookie.ts';
import type { Store } from '../src/store/db.ts';
import { externalLoad, type LoadSpec } from './external-load.ts';

const WORKFLOW_RUNS = 800_000;
const DIRECT_RUNS = 200_000;
const WORKFLOWS = 50;
const BATCH = 500;
const SPAN_MS = 90 * 24 * 3_600_000;
const CHAINS = [8453, 1, 42161] as const;

const workflowStatus = (i: number) => {
  const r = i % 100;
  return r < 90 ? 'success' : r < 96 ? 'error' : r < 97 ? 'system_error' : r < 98 ? 'running' : 'cancelled';
};

async function seed(store: Store, organizationId: string, userId: string): Promise<{ executionId: string }> {
  const now = Date.now();
  const workflowIds = Array.from({ length: WORKFLOWS }, () => newId());
  const at = (i: number, count: number) => now - 60_000 - Math.floor(((count - i) / count) * SPAN_MS);
  await store.transaction().execute(async (trx) => {
    const stamp = new Date(now).toISOString();
    await trx
      .insertInto('workflows')
      .values(
        workflowIds.map((id, i) => ({
          id,
          organization_id: organizationId,
          user_id: userId,
          name: `Bench workflow ${i}`,
          description: null,
          visibility: 'private' as const,
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
          created_at: stamp,
          updated_at: stamp,
        })),
      )
      .execute();
    for (let start = 0; start < WORKFLOW_RUNS; start += BATCH) {
      const rows = Array.from({ length: Math.min(BATCH, WORKFLOW_RUNS - start) }, (_, j) => {
        const i = start + j;
        const created = at(i, WORKFLOW_RUNS);
        const onchain = i % 5 === 0;
        const gasWei = String(21_000n * (1_000_000_000n + BigInt(i % 1000)));
        const status = workflowStatus(i);
        return {
          id: newSortableId(created),
          workflow_id: workflowIds[i % WORKFLOWS]!,
          organization_id: organizationId,
          user_id: null,
          status,
          input: '{}',
          output: '{}',
          created_at: new Date(created).toISOString(),
          started_at: new Date(created).toISOString(),
          completed_at: status === 'running' ? null : new Date(created + 50 + (i % 500)).toISOString(),
          trigger_type: 'Manual',
          transaction_hashes: onchain
            ? JSON.stringify([
                {
                  hash: `0x${i.toString(16).padStart(64, '0')}`,
                  nodeId: 'send',
                  nodeName: 'Send',
                  chainId: CHAINS[i % 3],
                  gasUsed: '21000',
                  gasUsedWei: gasWei,
                },
              ])
            : '[]',
          gas_used_wei: onchain ? gasWei : null,
        };
      });
      await trx.insertInto('workflow_executions').values(rows).execute();
    }
    for (let start = 0; start < DIRECT_RUNS; start += BATCH) {
      const rows = Array.from({ length: Math.min(BATCH, DIRECT_RUNS - start) }, (_, j) => {
        const i = start + j;
        const created = at(i, DIRECT_RUNS);
        return {
          id: newId(),
          organization_id: organizationId,
          api_key_id: null,
          type: 'transfer',
          chain_id: CHAINS[i % 3]!,
          status: i % 20 === 0 ? 'failed' : 'completed',
          value_wei: '1000',
          transaction_hash: `0x${(i + 1e9).toString(16).padStart(64, '0')}`,
          receipts: '[]',
          gas_used_wei: String(21_000n * (2_000_000_000n + BigInt(i % 1000))),
          created_at: new Date(created).toISOString(),
          completed_at: new Date(created + 800).toISOString(),
        };
      });
      await trx.insertInto('direct_executions').values(rows).execute();
    }
  });
  // The newest workflow run gets step logs, for the steps route.
  const newest = await store
    .selectFrom('workflow_executions')
    .select('id')
    .where('organization_id', '=', organizationId)
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirstOrThrow();
  await store
    .insertInto('workflow_execution_logs')
    .values(
      ['t', 'check', 'send'].map((nodeId, seq) => ({
        id: newSortableId(),
        execution_id: newest.id,
        node_id: nodeId,
        node_name: nodeId,
        node_type: 'action',
        status: 'success',
        input: '{"a":1}',
        output: '{"b":2}',
        error: null,
        started_at: new Date().toISOString(),
        completed_at: new Date().toISOString(),
        duration_ms: 3,
        seq,
      })),
    )
    .execute();
  return { executionId: newest.id };
}

export async function benchAnalytics(seconds: number): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'flowgate-bench-analytics-'));
  const baseUrl = 'http://127.0.0.1:3000';
  const gateway = await createGateway(
    loadConfig({ PORT: '0', FLOWGATE_DATA_DIR: dataDir, FLOWGATE_DEVNET: 'off', FLOWGATE_RATE_LIMITS: 'off', FLOWGATE_BASE_URL: baseUrl }),
  );
  const url = await gateway.listen();
  const { services } = gateway;
  const { organization, owner } = await services.organizations.ensure('analytics-bench');
  const key = (await services.keys.create({ organizationId: organization.id, userId: owner.id, name: 'bench', scope: 'mcp:read' })).key;
  const { token } = await services.sessions.create({ userId: owner.id, organizationId: organization.id });

  const seedStart = Date.now();
  const { executionId } = await seed(services.store, organization.id, owner.id);
  const seedSeconds = (Date.now() - seedStart) / 1000;

  const auth = { authorization: `Bearer ${key}` };
  const firstPage = (await (await fetch(`${url}/api/analytics/runs?range=90d`, { headers: auth })).json()) as { nextCursor: string };
  const rows: { name: string; request: LoadSpec['request'] }[] = [
    { name: 'summary (30d: ~333,000 runs)', request: { path: '/api/analytics/summary?range=30d', headers: auth } },
    { name: 'summary (90d: all 1,000,000 runs)', request: { path: '/api/analytics/summary?range=90d', headers: auth } },
    { name: 'summary (24h)', request: { path: '/api/analytics/summary?range=24h', headers: auth } },
    { name: 'time-series (30d, daily)', request: { path: '/api/analytics/time-series?range=30d', headers: auth } },
    { name: 'networks (30d)', request: { path: '/api/analytics/networks?range=30d', headers: auth } },
    { name: 'runs, first page (50)', request: { path: '/api/analytics/runs?range=90d', headers: auth } },
    { name: 'runs, next page (cursor)', request: { path: `/api/analytics/runs?range=90d&cursor=${firstPage.nextCursor}`, headers: auth } },
    { name: 'runs, status=error', request: { path: '/api/analytics/runs?range=90d&status=error', headers: auth } },
    { name: 'runs, source=direct', request: { path: '/api/analytics/runs?range=90d&source=direct', headers: auth } },
    {
      name: 'runs/{executionId}/steps (session)',
      request: { path: `/api/analytics/runs/${executionId}/steps`, headers: { cookie: `${sessionCookieName(baseUrl)}=${token}` } },
    },
    { name: 'spend-cap', request: { path: '/api/analytics/spend-cap', headers: auth } },
  ];

  const results = [];
  for (const row of rows) {
    const load = await externalLoad({ url, connections: 1, warmupSeconds: 1, durationSeconds: seconds, request: row.request });
    results.push({ ...row, ...load });
  }

  console.log(
    `\nAnalytics over ${(WORKFLOW_RUNS + DIRECT_RUNS).toLocaleString('en-US')} stored runs (seeded in ${seedSeconds.toFixed(0)} s), one client, ${seconds}s per row\n`,
  );
  console.log(['| route | p50 ms | p99 ms | req/s | errors |', '|---|---:|---:|---:|---:|'].join('\n'));
  for (const r of results) console.log(`| ${r.name} | ${r.p50} | ${r.p99} | ${r.samplesPerSecond.toFixed(1)} | ${r.failures} |`);

  await gateway.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
