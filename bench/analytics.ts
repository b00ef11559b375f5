/**
 * Analytics with 1,000,000 stored runs (issue "See what runs", scale check):
 * p50/p99 of each analytics route, one client at a time, so the figures are
 * what a dashboard request waits, not queueing behind other load. The runs
 * are written straight into the store of a gateway on a temporary database
 * (batched inserts in one transaction): 800,000 workflow executions over 50
 * workflows and 200,000 direct executions, spread over the last 90 days, all
 * in one organization, the worst case for a per-organization index.
 *
 * Then the dashboard's Runs page over the same store, in Debian's Chromium
 * driven by playwright-core (skipped, saying why, without it): first
 * contentful paint, first run row on screen, the next page of runs, and a
 * run's steps, each timed inside the page (performance.now(), the same clock
 * as the paint entries), plus the bytes of JS and CSS the page loads.
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
import { median } from './stats.ts';
import type { BrowserContext } from 'playwright-core';

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

  await benchRunsPage(url, sessionCookieName(baseUrl), token);

  await gateway.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

const CHROMIUM_PATH = process.env.FLOWGATE_CHROMIUM_PATH || '/usr/bin/chromium';
const BROWSER_TRIALS = 7;
/** Chromium's own traffic off, so the page's requests are the only ones. */
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-default-apps',
  '--disable-domain-reliability',
  '--disable-sync',
  '--metrics-recording-only',
  '--no-first-run',
];
const ROW = 'table.runs tbody tr[data-run-id]';
const STEP = 'ol.steps li.step';

/**
 * Runs in the page before its own scripts. A MutationObserver notes when the
 * number of run rows changes and when the first step appears; each note is
 * taken after the frame that shows it (a requestAnimationFrame, then a
 * message: the task after that frame's paint), on the page's clock.
 */
const MARKS_SCRIPT = `(() => {
  const marks = (window.__bench = { rows: [], steps: undefined });
  let rows = 0;
  let steps = false;
  const painted = (note) => requestAnimationFrame(() => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => note(performance.now());
    channel.port2.postMessage(0);
  });
  new MutationObserver(() => {
    const found = document.querySelectorAll(${JSON.stringify(ROW)});
    // Rows rendered while the app still hides the page (it mounts before the session is read) are not on screen yet.
    const count = found.length && found[0].checkVisibility() ? found.length : 0;
    if (count !== rows) {
      rows = count;
      painted((at) => marks.rows.push({ count, at }));
    }
    if (!steps && document.querySelector(${JSON.stringify(STEP)})) {
      steps = true;
      painted((at) => (marks.steps = at));
    }
  }).observe(document, { childList: true, subtree: true, attributes: true, attributeFilter: ['hidden'] });
})();`;

/** In the page: clicks the element `find` gives and resolves with the ms until `done()` has a note later than the click. */
const timedClick = (find: string, done: string) => `new Promise((resolve, reject) => {
  const marks = window.__bench;
  const target = ${find};
  if (!target) return reject(new Error('nothing at ' + ${JSON.stringify(find)}));
  const before = marks.rows.length ? marks.rows[marks.rows.length - 1].count : 0;
  const start = performance.now();
  target.click();
  const poll = setInterval(() => {
    const at = (${done})(before);
    if (at !== undefined && at > start) {
      clearInterval(poll);
      resolve(at - start);
    }
  }, 5);
  setTimeout(() => { clearInterval(poll); reject(new Error('timed out after clicking ' + ${JSON.stringify(find)})); }, 30000);
})`;
const MORE_BUTTON = `[...document.querySelectorAll('button')].find((b) => b.textContent.trim() === 'Load older runs')`;
const FIRST_RUN_LINK = `document.querySelector(${JSON.stringify(`${ROW} a`)})`;
const MORE_ROWS = `(before) => window.__bench.rows.find((r) => r.count > before)?.at`;
const STEPS_SHOWN = `() => window.__bench.steps`;

interface Trial {
  fcp: number;
  firstRow: number;
  mainThread: number;
  nextPage: number;
  steps: number;
  assets: { type: string; bytes: number }[];
  firstPageJson: number;
}

/** One cold visit (a fresh browser context: no cache, no service state) to the Runs page. */
async function runsPageTrial(context: BrowserContext, url: string): Promise<Trial> {
  await context.addInitScript({ content: MARKS_SCRIPT });
  const page = await context.newPage();
  const failures: string[] = [];
  page.on('pageerror', (e) => failures.push(e.message));
  context.on('request', (r) => {
    if (!r.url().startsWith(`${url}/`) && !r.url().startsWith('data:')) failures.push(`request outside the gateway: ${r.url()}`);
  });
  // The renderer main thread's CPU time (Chromium's ThreadTime): what the page itself costs, apart from waiting for a busy CPU.
  const cdp = await context.newCDPSession(page);
  await cdp.send('Performance.enable');
  const threadTime = async () => ((await cdp.send('Performance.getMetrics')).metrics.find((m) => m.name === 'ThreadTime')?.value ?? NaN) * 1000;
  const cpuBefore = await threadTime();
  await page.goto(`${url}/app/runs`);
  await page.locator(ROW).first().waitFor({ timeout: 60_000 });
  await page.waitForFunction('window.__bench.rows.some((r) => r.count > 0)');
  const mainThread = (await threadTime()) - cpuBefore;
  const first = (await page.evaluate(`({
    fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime,
    firstRow: window.__bench.rows.find((r) => r.count > 0).at,
    resources: performance.getEntriesByType('resource').map((e) => ({ name: e.name, type: e.initiatorType, bytes: e.encodedBodySize })),
  })`)) as { fcp: number; firstRow: number; resources: { name: string; type: string; bytes: number }[] };
  await page.getByRole('button', { name: 'Load older runs' }).waitFor();
  const nextPage = (await page.evaluate(timedClick(MORE_BUTTON, MORE_ROWS))) as number;
  const steps = (await page.evaluate(timedClick(FIRST_RUN_LINK, STEPS_SHOWN))) as number;
  if (failures.length) throw new Error(`the Runs page failed: ${failures.join('; ')}`);
  const assets = first.resources
    .filter((r) => /\/app\/assets\/.+\.(js|css)$/.test(r.name))
    .map((r) => ({ type: r.name.endsWith('.css') ? 'CSS' : 'JS', bytes: r.bytes }));
  const firstPageJson = first.resources.find((r) => r.name.includes('/api/analytics/runs'))?.bytes ?? 0;
  return { fcp: first.fcp, firstRow: first.firstRow, mainThread, nextPage, steps, assets, firstPageJson };
}

/** The Runs page in Chromium over the seeded store, signed in with a session cookie as the link sign-in would set it. */
async function benchRunsPage(url: string, cookieName: string, token: string): Promise<void> {
  if (!fs.existsSync(CHROMIUM_PATH)) {
    console.log(`\nRuns page in Chromium: skipped, no Chromium at ${CHROMIUM_PATH} (install Debian's chromium package, or set FLOWGATE_CHROMIUM_PATH)`);
    return;
  }
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS });
  const version = browser.version();
  const trials: Trial[] = [];
  try {
    for (let i = 0; i < BROWSER_TRIALS; i++) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      await context.addCookies([{ name: cookieName, value: token, url }]);
      trials.push(await runsPageTrial(context, url));
      await context.close();
    }
  } finally {
    await browser.close();
  }
  const row = (name: string, pick: (t: Trial) => number) => {
    const xs = trials.map(pick);
    return `| ${name} | ${median(xs).toFixed(0)} | ${Math.max(...xs).toFixed(0)} |`;
  };
  console.log(
    `\nRuns page (/app/runs, 7d, 50 rows a page) in headless Chromium ${version}, ${BROWSER_TRIALS} cold visits, load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} cores\n`,
  );
  console.log(
    [
      '| measurement (in-page clock) | median ms | max ms |',
      '|---|---:|---:|',
      row('navigation → first contentful paint', (t) => t.fcp),
      row('navigation → first run row on screen', (t) => t.firstRow),
      row('main-thread CPU time, navigation to just after that row', (t) => t.mainThread),
      row('"Load older runs" → next 50 rows on screen', (t) => t.nextPage),
      row('click a run → its steps on screen', (t) => t.steps),
    ].join('\n'),
  );
  const bytes = (type: string) => trials[0]!.assets.filter((a) => a.type === type).reduce((sum, a) => sum + a.bytes, 0);
  console.log(
    `\nThe page loads ${(bytes('JS') / 1000).toFixed(1)} kB of JS and ${(bytes('CSS') / 1000).toFixed(1)} kB of CSS (as sent); the first page of runs is ${(trials[0]!.firstPageJson / 1000).toFixed(1)} kB of JSON.`,
  );
}
