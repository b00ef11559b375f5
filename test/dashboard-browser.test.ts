import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { browserClient, signIn } from './helpers/session.ts';
import { openLink } from './helpers/cli.ts';
import { pruneOldRunData } from '../src/engine/run-retention.ts';

/**
 * The dashboard in a real browser: Debian's Chromium, headless, driven by
 * playwright-core against a started gateway on anvil. The browser wallet is a
 * window.ethereum shim whose personal_sign is a viem local account in the test
 * process (page.exposeFunction), so SIWE and step-up signatures are real.
 *
 * Skipped when no Chromium is installed (FLOWGATE_CHROMIUM_PATH, default
 * /usr/bin/chromium) unless FLOWGATE_REQUIRE_BROWSER=1. With
 * FLOWGATE_DASHBOARD_SCREENSHOTS=1 it also writes the README screenshots to docs/.
 */

const CHROMIUM = process.env.FLOWGATE_CHROMIUM_PATH || '/usr/bin/chromium';
const HAVE_BROWSER = fs.existsSync(CHROMIUM);
if (!HAVE_BROWSER && process.env.FLOWGATE_REQUIRE_BROWSER === '1') {
  throw new Error(`FLOWGATE_REQUIRE_BROWSER=1 but there is no Chromium at ${CHROMIUM} (apt-get install chromium, or set FLOWGATE_CHROMIUM_PATH)`);
}
const SKIP_REASON = HAVE_BROWSER
  ? ''
  : ` — skipped: no Chromium at ${CHROMIUM} (install it, or set FLOWGATE_CHROMIUM_PATH; FLOWGATE_REQUIRE_BROWSER=1 fails instead)`;
const SCREENSHOTS = process.env.FLOWGATE_DASHBOARD_SCREENSHOTS === '1';

let chain: TestChain;
let gw: TestGateway;
let browser: Browser;
let key: string;
let orgSlug: string;
let workflowId: string;
const wallet = privateKeyToAccount(generatePrivateKey());
const signed: string[] = [];
const foreignRequests: string[] = [];
const pageErrors: string[] = [];

const api = (p: string, init: Parameters<typeof fetchJson>[1] = {}) => fetchJson(`${gw.url}${p}`, { key, ...init });

/** A browser context with the test wallet injected and every request and page error recorded. */
async function newContext(): Promise<BrowserContext> {
  const context = await browser.newContext({ baseURL: gw.url, viewport: { width: 1280, height: 900 } });
  await context.exposeFunction('__testWalletSign', async (hexMessage: `0x${string}`) => {
    signed.push(hexMessage);
    return wallet.signMessage({ message: { raw: hexMessage } });
  });
  await context.addInitScript(
    ({ address }) => {
      const w = window as unknown as { ethereum: unknown; __testWalletSign(m: string): Promise<string> };
      w.ethereum = {
        async request({ method, params }: { method: string; params?: unknown[] }) {
          if (method === 'eth_requestAccounts' || method === 'eth_accounts') return [address];
          if (method === 'eth_chainId') return '0x1';
          if (method === 'personal_sign') return w.__testWalletSign(String(params?.[0]));
          throw new Error(`test wallet: unsupported ${method}`);
        },
      };
    },
    { address: wallet.address },
  );
  context.on('request', (request) => {
    const url = request.url();
    if (!url.startsWith(`${gw.url}/`) && !url.startsWith('data:')) foreignRequests.push(url);
  });
  context.on('page', (page) => {
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error' && /Content Security Policy|Refused to/i.test(message.text())) pageErrors.push(message.text());
    });
  });
  return context;
}

/** The one-time link flow, as an operator on a headless server would use it. */
async function signedInPage(): Promise<Page> {
  const context = await newContext();
  const page = await context.newPage();
  await page.goto(await openLink(gw.dataDir, gw.url, orgSlug));
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  return page;
}

async function startRun(): Promise<string> {
  const started = await api(`/api/workflows/${workflowId}/execute`, { method: 'POST', body: JSON.stringify({ input: {} }) });
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  return started.body.executionId;
}

const shot = async (page: Page, name: string) => {
  if (SCREENSHOTS) await page.screenshot({ path: path.resolve('docs', `dashboard-${name}.png`), fullPage: true });
};

describe.skipIf(!HAVE_BROWSER)(`dashboard in Chromium${SKIP_REASON}`, { timeout: 120_000 }, () => {
  beforeAll(async () => {
    // Base's chain id, so the catalog gives runs on it a real block explorer to link to.
    chain = await startTestChain(8453);
    gw = await startTestGateway({ env: { FLOWGATE_RPC_URL_8453: chain.url, FLOWGATE_RATE_LIMITS: 'off' } });
    // The wallet's first sign-in creates its user and organization; the dashboard then signs in to it with `flowgate open --org`.
    const account = await signIn(browserClient(gw.url), gw.url, wallet);
    orgSlug = account.organization.slug;
    const orgWallet = await gw.gateway.services.organizations.wallet(account.organization.id);
    await chain.setBalance(orgWallet!.walletAddress as `0x${string}`, '10');
    key = await gw.createKey({ org: orgSlug, name: 'test agent' });
    const created = await api('/api/workflows/create', {
      method: 'POST',
      body: JSON.stringify({
        name: 'Treasury balance',
        nodes: [
          { id: 'trigger', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
          { id: 'balance', type: 'web3/check-balance', data: { label: 'Balance', config: { network: '8453', address: wallet.address } } },
        ],
        edges: [{ id: 'e1', source: 'trigger', target: 'balance' }],
      }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    workflowId = created.body.id;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await gw?.close();
    await chain?.stop();
  });

  it('signs in with the one-time link from `flowgate open`, drops the token from the address bar, and shows the overview', async () => {
    const page = await signedInPage();
    expect(new URL(page.url()).pathname).toBe('/app/');
    expect(page.url()).not.toContain('token');
    await page.getByText('Total runs').waitFor();
    await page.locator('.card').first().waitFor();
    // uPlot draws on a canvas: the chart is a real chart, not a table.
    await page.locator('.chart canvas').waitFor();
    expect(await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Overview' }).getAttribute('aria-current')).toBe('page');

    // The link worked once: opening it again lands on an error, not a session.
    const replay = await (await newContext()).newPage();
    const link = await openLink(gw.dataDir, gw.url, orgSlug);
    await replay.goto(link);
    await replay.getByRole('heading', { name: 'Overview' }).waitFor();
    const second = await (await newContext()).newPage();
    await second.goto(link);
    await second.getByRole('alert').waitFor();
    expect(await second.getByRole('alert').textContent()).toMatch(/unknown, expired or already used/);
    await page.context().close();
  });

  it('shows a new run live on the Runs page, without reloading, and opens its steps', async () => {
    const page = await signedInPage();
    await page.getByRole('navigation').getByRole('link', { name: 'Runs' }).click();
    await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
    let navigations = 0;
    page.on('framenavigated', () => navigations++);

    const executionId = await startRun();
    const row = page.locator(`tr[data-run-id="${executionId}"]`);
    await row.waitFor({ timeout: 20_000 });
    // The stream keeps it current: the row turns to success once the run completes.
    await row.locator('.status', { hasText: 'success' }).waitFor({ timeout: 30_000 });
    expect(navigations).toBe(0);
    expect(await row.textContent()).toContain('Treasury balance');

    // Filters: a direct-only view hides the workflow run.
    await page.getByLabel('Source').selectOption('direct');
    await row.waitFor({ state: 'detached' });
    await page.getByLabel('Source').selectOption('');
    await row.getByRole('link').click();
    await page.waitForURL(`**/app/runs/${executionId}`);
    const step = page.locator('li.step[data-step="balance"]');
    await step.waitFor();
    expect(await page.locator('.run-summary').textContent()).toContain(workflowId);
    expect(await step.locator('h2').textContent()).toContain('Balance');
    expect(await step.locator('.status').textContent()).toBe('success');
    expect(await step.locator('pre').nth(1).textContent()).toContain('balance');
    expect(await step.textContent()).toMatch(/took \d/);
    await page.context().close();
  });

  it('says so when retention has removed a run’s steps, instead of “no steps logged yet”', async () => {
    const executionId = await startRun();
    expect((await api(`/api/workflows/executions/${executionId}/wait?timeoutMs=20000`)).body.status).toBe('success');
    // Forty days pass; the retention (30 days by default) removes the run's data at the next sweep.
    const store = gw.gateway.services.store;
    await store
      .updateTable('workflow_executions')
      .set({ created_at: new Date(Date.now() - 40 * 86_400_000).toISOString() })
      .where('id', '=', executionId)
      .execute();
    expect(await pruneOldRunData(store, 30)).toBeGreaterThanOrEqual(1);
    const page = await signedInPage();
    await page.goto(`/app/runs/${executionId}`);
    const note = page.getByRole('note').filter({ hasText: 'steps were removed' });
    await note.waitFor();
    expect(await note.textContent()).toContain('keeps run data for a set number of days');
    expect(await page.locator('li.step').count()).toBe(0);
    expect(await page.getByText('no steps logged yet').count()).toBe(0);
    expect(await page.locator('.run-summary').textContent()).toContain(workflowId);
    await page.context().close();
  });

  it('lists a direct transfer with its gas and links its transaction to the chain explorer', async () => {
    const page = await signedInPage();
    await page.goto('/app/runs');
    await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
    const sent = await api('/api/execute/transfer', {
      method: 'POST',
      body: JSON.stringify({ network: 'base', recipientAddress: chain.account(3).address.toLowerCase(), amount: '0.01' }),
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    const executionId = sent.body.executionId as string;
    const row = page.locator(`tr[data-run-id="${executionId}"]`);
    await row.locator('.status', { hasText: /completed|success/ }).waitFor({ timeout: 30_000 });
    expect(await row.textContent()).toMatch(/direct/);
    expect(await row.textContent()).toMatch(/\d ETH/);
    await row.getByRole('link').click();
    const link = page.locator('li.step a[href*="/tx/0x"]');
    await link.waitFor();
    expect(await page.locator('.run-summary').textContent()).toContain('direct transfer on chain 8453');
    const receipt = await chain.publicClient.getTransactionReceipt({ hash: (await link.textContent())!.slice(0, 66) as `0x${string}` });
    expect(receipt.status).toBe('success');
    expect(await link.getAttribute('href')).toMatch(/^https:\/\/basescan\.org\/tx\/0x[0-9a-f]{64}$/);
    expect(await link.getAttribute('rel')).toContain('noreferrer');
    await page.context().close();
  });

  it('opened directly, the Runs page asks for its runs while the session is still being read, and leaves the chart library to the overview', async () => {
    // Signed in through the link, then a fresh context with that cookie: an empty cache, as on a first visit to a bookmarked /app/runs.
    const signedIn = await signedInPage();
    const cookies = await signedIn.context().cookies();
    await signedIn.context().close();
    const context = await newContext();
    await context.addCookies(cookies);
    const page = await context.newPage();
    const order: string[] = [];
    const scripts: string[] = [];
    let answerSession!: () => void;
    const sessionHeld = new Promise<void>((resolve) => (answerSession = resolve));
    // The session's answer waits until the runs are asked for (or 5 s, so a page that waits for the session fails the check, not the run).
    setTimeout(() => answerSession(), 5_000);
    await page.route('**/api/auth/session', async (route) => {
      await sessionHeld;
      order.push('session answered');
      await route.continue();
    });
    page.on('request', (request) => {
      const { pathname } = new URL(request.url());
      if (pathname === '/api/analytics/runs') {
        order.push('runs asked');
        answerSession();
      }
      if (request.resourceType() === 'script') scripts.push(pathname);
    });
    await page.goto('/app/runs');
    await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
    expect(order.slice(0, 2)).toEqual(['runs asked', 'session answered']);
    const runsPageScripts = scripts.length;
    expect(runsPageScripts).toBe(1);
    await page.getByRole('navigation').getByRole('link', { name: 'Overview' }).click();
    await page.locator('.chart canvas').waitFor();
    expect(scripts.length).toBe(runsPageScripts + 1);
    await context.close();
  });

  it('creates and revokes an API key through the step-up flow, the wallet signing the challenge in the page', async () => {
    const page = await signedInPage();
    await page.getByRole('link', { name: 'Keys and members' }).click();
    await page.getByRole('heading', { level: 1, name: 'Keys and members' }).waitFor();
    // Members: the wallet owner is listed.
    await page.locator('table', { hasText: wallet.address }).first().waitFor();

    const before = signed.length;
    await page.getByLabel('Name').fill('from the dashboard');
    await page.getByLabel('Scope').selectOption('mcp:read');
    await page.getByRole('button', { name: /Create key/ }).click();
    const newKey = page.getByTestId('new-key');
    await newKey.waitFor({ timeout: 20_000 });
    const created = await newKey.inputValue();
    expect(created).toMatch(/^svc_/);
    expect(signed.length).toBe(before + 1);
    // The signed message was the server's challenge, verbatim.
    expect(Buffer.from(signed.at(-1)!.slice(2), 'hex').toString('utf8')).toMatch(/Flowgate|challenge|nonce/i);
    expect((await fetchJson(`${gw.url}/api/workflows`, { key: created })).status).toBe(200);

    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Revoke key from the dashboard' }).click();
    await page
      .locator('tr', { hasText: 'from the dashboard' })
      .getByText(/^revoked/)
      .waitFor({ timeout: 20_000 });
    expect(signed.length).toBe(before + 2);
    expect((await fetchJson(`${gw.url}/api/workflows`, { key: created })).status).toBe(401);
    await page.context().close();
  });

  it('draws the workflow graph, runs it now and disables it', async () => {
    const page = await signedInPage();
    await page.goto('/app/workflows');
    const card = page.locator(`article[data-workflow-id="${workflowId}"]`);
    const graph = card.getByTestId('workflow-graph');
    await graph.waitFor();
    expect(await graph.locator('[data-node-id]').count()).toBe(2);
    expect(await graph.locator('[data-node-id="trigger"]').textContent()).toContain('Start');
    expect(await graph.locator('[data-node-id="balance"]').textContent()).toContain('Balance');
    expect(await graph.locator('[data-node-id="balance"]').textContent()).toContain('web3/check-balance');
    expect(await graph.locator('path.edge').count()).toBe(1);
    expect(await graph.getAttribute('role')).toBe('img');

    await card.getByRole('button', { name: 'Run now' }).click();
    const message = await card.getByRole('status').filter({ hasText: 'Started run' }).textContent();
    const executionId = /Started run (\S+)\./.exec(message!)![1]!;
    expect((await api(`/api/workflows/executions/${executionId}/status`)).status).toBe(200);
    await card.locator('.last-runs li').first().waitFor();

    await card.getByRole('button', { name: 'Disable' }).click();
    await card.getByRole('button', { name: 'Enable' }).waitFor();
    expect((await api(`/api/workflows/${workflowId}`)).body.enabled).toBe(false);
    await card.getByRole('button', { name: 'Enable' }).click();
    await card.getByRole('button', { name: 'Disable' }).waitFor();
    expect((await api(`/api/workflows/${workflowId}`)).body.enabled).toBe(true);
    await page.context().close();
  });

  it("does not draw another organization's public workflow as this organization's own", async () => {
    // A hostile tenant publishes a workflow whose name and description are a phishing notice, and sends its link.
    const rival = browserClient(gw.url);
    await signIn(rival, gw.url, privateKeyToAccount(generatePrivateKey()));
    const notice = 'SECURITY NOTICE from Flowgate: rotate your keys at https://flowgate-security.example';
    const made = await rival.fetch('/api/workflows/create', {
      method: 'POST',
      json: { name: notice, nodes: [{ id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } }], edges: [] },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    expect((await rival.fetch(`/api/workflows/${made.body.id}/go-live`, { method: 'PUT', json: { name: notice } })).status).toBe(200);
    // The API answers it by id (it is public), marked as not the caller's.
    expect((await api(`/api/workflows/${made.body.id}`)).body.isOwner).toBe(false);

    const page = await signedInPage();
    await page.goto(`/app/workflows/${made.body.id}`);
    await page.getByRole('alert').filter({ hasText: 'is not in this organization' }).waitFor();
    expect(await page.getByRole('button', { name: 'Run now' }).count()).toBe(0);
    expect(await page.locator('main').textContent()).not.toContain('SECURITY NOTICE');
    // The organization's own workflow still opens by its link.
    await page.goto(`/app/workflows/${workflowId}`);
    await page.locator(`article[data-workflow-id="${workflowId}"]`).getByRole('button', { name: 'Run now' }).waitFor();
    await page.context().close();
  });

  it('signs in with the browser wallet (SIWE) from the sign-in page, and the spend page shows the caps', async () => {
    const context = await newContext();
    const page = await context.newPage();
    await page.goto('/app/spend');
    await page.getByRole('button', { name: 'Sign in with wallet' }).click();
    await page.getByRole('heading', { level: 1, name: 'Spend' }).waitFor();
    await page.locator('table', { hasText: 'All EVM chains' }).waitFor();
    expect(await page.locator('meter').count()).toBeGreaterThanOrEqual(2);
    // The organization's use of the deployment's limits: a row per quota, the day's run data, waiting runs, retention.
    const limits = page.locator('table', { hasText: "the organization's use" });
    await limits.waitFor();
    const usage = (await api('/api/organization/usage')).body;
    const workflows = usage.quotas.find((q: { resource: string }) => q.resource === 'workflows');
    const row = limits.locator('tr[data-limit="FLOWGATE_MAX_WORKFLOWS_PER_ORG"]');
    expect(await row.locator('th').textContent()).toBe('Workflows');
    expect(await row.locator('td').nth(0).textContent()).toBe(String(workflows.used));
    expect(await row.locator('td').nth(1).textContent()).toBe('10,000');
    expect(await limits.locator('tr[data-limit="FLOWGATE_RUN_DATA_PER_ORG_PER_DAY_BYTES"] th').textContent()).toMatch(/^Run data today/);
    expect(await limits.locator('tbody tr').count()).toBe(usage.quotas.length + 3);
    expect(await page.getByText('Finished runs keep their steps 30 days; audit rows are kept 365 days.').count()).toBe(1);
    await context.close();
  });

  it('works from the keyboard, moves focus to each new page, and labels every control', async () => {
    const page = await signedInPage();
    const active = () => page.evaluate(() => document.activeElement?.textContent?.trim());
    await page.keyboard.press('Tab');
    expect(await active()).toBe('Skip to content');
    await page.keyboard.press('Tab');
    expect(await active()).toBe('Overview');
    await page.keyboard.press('Tab');
    expect(await active()).toBe('Runs');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Runs' }).waitFor();
    await page.waitForFunction(() => document.activeElement?.tagName === 'H1');

    for (const route of ['/app/', '/app/runs', '/app/workflows', '/app/spend', '/app/access']) {
      await page.goto(route);
      await page.locator('main h1').waitFor();
      await page.waitForFunction(() => !document.querySelector('[aria-busy="true"]'));
      const unlabeled = await page.evaluate(() =>
        [...document.querySelectorAll<HTMLElement>('input, select, button, a[href], [role="img"]')]
          .filter((el) => {
            const labels = (el as HTMLInputElement).labels;
            const named = el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') || el.textContent?.trim() || (labels && labels.length > 0);
            return !named;
          })
          .map((el) => el.outerHTML.slice(0, 120)),
      );
      expect(unlabeled, route).toEqual([]);
      expect(await page.locator('main h1').count(), route).toBe(1);
    }
    await page.context().close();
  });

  it('returns to the sign-in page when the session ends elsewhere, and signs out from the header', async () => {
    const page = await signedInPage();
    // Revoked server-side (as from another device): the next API call is refused and the page says so by showing sign-in.
    await gw.gateway.services.store.updateTable('sessions').set({ revoked_at: new Date().toISOString() }).where('revoked_at', 'is', null).execute();
    await page.getByRole('navigation').getByRole('link', { name: 'Spend' }).click();
    await page.getByRole('button', { name: 'Sign in with wallet' }).waitFor();

    const again = await signedInPage();
    await again.getByRole('button', { name: 'Sign out' }).click();
    await again.getByRole('button', { name: 'Sign in with wallet' }).waitFor();
    expect((await again.request.get('/api/auth/session')).status()).toBe(401);
    await page.context().close();
    await again.context().close();
  });

  it('makes no request outside the gateway and breaks no Content-Security-Policy rule', async () => {
    if (SCREENSHOTS) {
      const page = await signedInPage();
      for (let i = 0; i < 3; i++) await startRun();
      await new Promise((r) => setTimeout(r, 3_000));
      await page.reload();
      await page.locator('.chart canvas').waitFor();
      await shot(page, 'overview');
      await page.goto('/app/runs');
      await page.locator('tr[data-run-id] .status', { hasText: 'success' }).first().waitFor();
      await shot(page, 'runs');
      await page.locator('tr[data-run-id] a').first().click();
      await page.locator('li.step').first().waitFor();
      await shot(page, 'run-steps');
      await page.goto('/app/workflows');
      await page.getByTestId('workflow-graph').first().waitFor();
      await shot(page, 'workflows');
      await page.context().close();
    }
    expect(foreignRequests).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  // Last: it adds fifty workflows, which would push the one above off the first page.
  it('reads the workflow list in pages of fifty, newest first, and shows the rest on request', async () => {
    for (let i = 0; i < 50; i++) {
      const made = await api('/api/workflows/create', {
        method: 'POST',
        body: JSON.stringify({
          name: `Paged ${i}`,
          nodes: [{ id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } }],
          edges: [],
        }),
      });
      expect(made.status).toBe(200);
    }
    const page = await signedInPage();
    const asked: string[] = [];
    page.on('request', (r) => {
      if (new URL(r.url()).pathname === '/api/workflows') asked.push(new URL(r.url()).search);
    });
    await page.goto('/app/workflows');
    const more = page.getByRole('button', { name: 'Show 50 more workflows' });
    await more.waitFor();
    expect(await page.locator('article[data-workflow-id]').count()).toBe(50);
    expect(await page.locator(`article[data-workflow-id="${workflowId}"]`).count()).toBe(0);
    await more.click();
    await page.locator(`article[data-workflow-id="${workflowId}"]`).waitFor();
    expect(await page.locator('article[data-workflow-id]').count()).toBe(51);
    expect(await more.count()).toBe(0);
    expect(asked.every((search) => /^\?limit=50&offset=\d+$/.test(search))).toBe(true);
    await page.context().close();
  });
});
