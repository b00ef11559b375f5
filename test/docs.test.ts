import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actions, triggers } from '../src/actions/index.ts';
import { renderMarkdown } from '../src/docs/markdown.ts';
import { ERROR_CODES } from '../src/errors.ts';
import { ACTION_REFERENCE_SLUG, DOCS_DIR, PAGE_SLUGS } from '../src/docs/site.ts';
import { DEPRECATIONS } from '../tools/deprecations.ts';
import { registry } from '../tools/index.ts';
import { rawGet, startTestGateway, type TestGateway } from './helpers/gateway.ts';

const BASE = 'https://docs.flowgate.example';
let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_BASE_URL: BASE } });
});
afterAll(() => gw.close());

const get = (path: string, headers: Record<string, string> = {}) => rawGet(`${gw.url}${path}`, headers);
const ALL_SLUGS = [...PAGE_SLUGS, ACTION_REFERENCE_SLUG];

describe('docs pages', () => {
  it('one Markdown file per area in docs/, and every file is served', () => {
    const files = fs
      .readdirSync(DOCS_DIR)
      .filter((f) => f.endsWith('.md'))
      .map((f) => f.replace(/\.md$/, ''))
      .sort();
    expect(files).toEqual([...PAGE_SLUGS].sort());
    for (const area of [
      'quick-start',
      'authentication',
      'workflows',
      'executions',
      'notifications',
      'direct-execution',
      'payments',
      'mcp',
      'limits',
      'errors',
      'versioning',
    ])
      expect(files).toContain(area);
  });

  it.each(ALL_SLUGS)('/docs/%s is HTML by default, Markdown with Accept: text/markdown or .md, and Vary: Accept', async (slug) => {
    const html = await get(`/docs/${slug}`);
    expect(html.status).toBe(200);
    expect(html.headers['content-type']).toMatch(/^text\/html/);
    expect(html.headers.vary).toContain('Accept');
    expect(html.body).toMatch(/^<!doctype html>/);
    expect(html.body).toContain('<h1 id=');

    const markdown = await get(`/docs/${slug}`, { Accept: 'text/markdown' });
    expect(markdown.status).toBe(200);
    expect(markdown.headers['content-type']).toMatch(/^text\/markdown/);
    expect(markdown.headers.vary).toContain('Accept');
    expect(markdown.body).toMatch(/^# /);
    expect(markdown.body).not.toContain('<!-- generated:');

    const suffix = await get(`/docs/${slug}.md`);
    expect(suffix.headers['content-type']).toMatch(/^text\/markdown/);
    expect(suffix.body).toBe(markdown.body);
  });

  it('an Accept the gateway cannot serve gets HTML; browsers get HTML', async () => {
    expect((await get('/docs/errors', { Accept: 'application/json' })).headers['content-type']).toMatch(/^text\/html/);
    expect((await get('/docs/errors', { Accept: 'image/png' })).headers['content-type']).toMatch(/^text\/html/);
    expect((await get('/docs/errors', { Accept: 'text/html,application/xhtml+xml,*/*;q=0.8' })).headers['content-type']).toMatch(/^text\/html/);
    expect((await get('/docs/errors', { Accept: 'text/markdown, text/html;q=0.5' })).headers['content-type']).toMatch(/^text\/markdown/);
  });

  it('an unknown page is a 404 in the requested format', async () => {
    const html = await get('/docs/no-such-page');
    expect(html.status).toBe(404);
    expect(html.headers['content-type']).toMatch(/^text\/html/);
    expect(html.body).toContain('Page not found');
    const markdown = await get('/docs/no-such-page', { Accept: 'text/markdown' });
    expect(markdown.status).toBe(404);
    expect(markdown.headers['content-type']).toMatch(/^text\/markdown/);
    expect(markdown.body).toContain('# Page not found');
    expect(markdown.body).toContain('/docs/quick-start');
    const suffix = await get('/docs/no-such-page.md');
    expect(suffix.status).toBe(404);
    expect(suffix.headers['content-type']).toMatch(/^text\/markdown/);
    const deeper = await get('/docs/workflows/nested.md');
    expect(deeper.status).toBe(404);
    expect(deeper.headers['content-type']).toMatch(/^text\/markdown/);
    // The requested name is shown escaped, never as markup.
    const hostile = await get('/docs/%3Cscript%3Ealert(1)%3C%2Fscript%3E');
    expect(hostile.status).toBe(404);
    expect(hostile.body).not.toContain('<script>');
    // A name that would be read as Markdown is not shown: a backtick closed the code span and put the requester's link on the page.
    const phishing = await get(`/docs/${encodeURIComponent('x` Your session expired: [sign in again](https://evil.example/phish) `')}`);
    expect(phishing.status).toBe(404);
    expect(phishing.body).not.toContain('evil.example');
    expect(phishing.body).toContain('There is no documentation page by that name');
    expect(html.body).toContain('named <code>no-such-page</code>');
    // Every HTML page forbids scripts, framing and sniffing.
    for (const page of [html, await get('/docs/errors'), await get('/docs')]) {
      expect(page.headers['content-security-policy']).toContain("default-src 'none'");
      expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(page.headers['x-content-type-options']).toBe('nosniff');
    }
  });

  it('pages are cacheable: ETag and 304 on If-None-Match, per representation', async () => {
    for (const headers of [{}, { Accept: 'text/markdown' }] as Record<string, string>[]) {
      const first = await get('/docs/versioning', headers);
      expect(first.headers['cache-control']).toMatch(/^public, max-age=\d+$/);
      const etag = first.headers.etag as string;
      expect(etag).toBeTruthy();
      const again = await get('/docs/versioning', { ...headers, 'If-None-Match': etag });
      expect(again.status).toBe(304);
    }
    const html = (await get('/docs/versioning')).headers.etag;
    const md = (await get('/docs/versioning', { Accept: 'text/markdown' })).headers.etag;
    expect(html).not.toBe(md);
  });

  it('uses the configured base URL, not the listening address', async () => {
    const { body } = await get('/docs/quick-start.md');
    expect(body).toContain(`${BASE}/mcp`);
    expect(body).not.toContain('{base_url}');
    expect(body).not.toContain('127.0.0.1');
  });
});

describe('generated content', () => {
  it('the action reference lists every action and trigger of the action registry', async () => {
    const { body } = await get('/docs/actions.md');
    for (const action of actions) expect(body).toContain(`### ${action.actionType}\n`);
    for (const trigger of triggers) expect(body).toContain(`### ${trigger.triggerType}\n`);
    const condition = actions.find((a) => a.actionType === 'Condition')!;
    for (const field of Object.keys(condition.requiredFields)) expect(body).toContain(`\`${field}\``);
  });

  it('the MCP page lists every MCP tool; the versioning page every declared deprecation', async () => {
    const mcp = (await get('/docs/mcp.md')).body;
    for (const tool of registry.filter((t) => t.mcp)) expect(mcp).toContain(`\`${tool.name}\``);
    const versioning = (await get('/docs/versioning.md')).body;
    for (const name of Object.keys(DEPRECATIONS)) expect(versioning).toContain(`\`${name}\``);
  });

  it('the errors page lists every error code of the catalogue with its status', async () => {
    const markdown = (await get('/docs/errors', { Accept: 'text/markdown' })).body;
    for (const [code, { status }] of Object.entries(ERROR_CODES)) expect(markdown).toContain(`| ${status} | \`${code}\` |`);
  });

  it('every deprecation Link target exists as an anchor of the versioning page', async () => {
    const html = (await get('/docs/versioning')).body;
    for (const d of Object.values(DEPRECATIONS)) expect(html).toContain(`id="${d.docs.split('#')[1]}"`);
  });
});

describe('indexes', () => {
  it('/docs lists every page; /llms.txt has one line per page pointing at its Markdown', async () => {
    const index = await get('/docs', { Accept: 'text/markdown' });
    for (const slug of ALL_SLUGS) expect(index.body).toContain(`(/docs/${slug})`);

    const llms = await get('/llms.txt');
    expect(llms.status).toBe(200);
    expect(llms.headers['content-type']).toMatch(/^text\/plain/);
    expect(llms.body).toMatch(/^# Flowgate\n\n> /);
    const lines = llms.body.split('\n').filter((l) => l.startsWith(`- [`) && l.includes('/docs/'));
    expect(lines).toHaveLength(ALL_SLUGS.length);
    for (const slug of ALL_SLUGS) expect(llms.body).toContain(`(${BASE}/docs/${slug}.md): `);
  });

  it('/sitemap.xml lists the docs pages at the base URL', async () => {
    const sitemap = await get('/sitemap.xml');
    expect(sitemap.status).toBe(200);
    expect(sitemap.headers['content-type']).toMatch(/^application\/xml/);
    const locs = [...sitemap.body.matchAll(/<loc>([^<]+)<\/loc>/g)].map((m) => m[1]);
    expect(locs).toEqual([`${BASE}/docs`, ...ALL_SLUGS.map((s) => `${BASE}/docs/${s}`)]);
  });
});

describe('markdown rendering', () => {
  it('escapes raw HTML and drops unsafe link targets', () => {
    const html = renderMarkdown('# T\n\n<img src=x onerror=alert(1)> and [x](javascript:alert(1)) and [ok](/docs/mcp) `<b>`');
    expect(html).not.toContain('<img');
    expect(html).toContain('&lt;img');
    expect(html).not.toContain('href="javascript');
    expect(html).toContain('<a href="/docs/mcp">ok</a>');
    expect(html).toContain('<code>&lt;b&gt;</code>');
  });

  it('renders tables, lists and fenced code', () => {
    const html = renderMarkdown('| a | b |\n|---|---|\n| `x\\|y` | 2 |\n\n- one\n- two\n\n```json\n{"a": "<b>"}\n```');
    const compact = html.replace(/\n/g, '');
    expect(compact).toContain('<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td><code>x|y</code></td><td>2</td></tr></tbody></table>');
    expect(compact).toContain('<ul><li>one</li><li>two</li></ul>');
    expect(html).toContain('<pre><code class="language-json">{&quot;a&quot;: &quot;&lt;b&gt;&quot;}\n</code></pre>');
  });

  it('keeps cron expressions intact: asterisks are not emphasis', async () => {
    expect(renderMarkdown('Every quarter hour: */15 * * * * (or `*/15 * * * *`).')).toContain(
      'Every quarter hour: */15 * * * * (or <code>*/15 * * * *</code>).',
    );
    // The served action reference documents scheduleCron with this example.
    const page = await get(`/docs/${ACTION_REFERENCE_SLUG}`);
    expect(page.body).toContain('*/15 * * * *');
    expect(page.body).not.toMatch(/<em>[^<]*15/);
  });
});
