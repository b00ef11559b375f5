import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts';
import { fetchJson, rawGet, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { browserClient, signIn } from './helpers/session.ts';
import { openLink, runCli } from './helpers/cli.ts';
import { dashboardSourceHash, SOURCE_HASH_FILE } from '../web/source-hash.ts';
import { tokenHash } from '../src/auth/tokens.ts';

/**
 * The dashboard's server side: /app serves the committed build with a
 * self-only CSP, and `flowgate open` links sign in once, within five minutes,
 * audited. (The pages themselves are driven in a real browser in
 * test/dashboard-browser.test.ts.)
 */

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(() => gw?.close());

/** A GET whose body is kept as bytes (encoded answers are not decoded). */
function getBytes(url: string, headers: Record<string, string>): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

const tokenOf = (link: string) => new URL(link).hash.replace(/^#token=/, '');

describe('/app', () => {
  it('serves the dashboard at /app and every client route under it, with a self-only Content-Security-Policy', async () => {
    for (const route of ['/app', '/app/', '/app/runs', '/app/runs/some-execution', '/app/link']) {
      const res = await rawGet(`${gw.url}${route}`);
      expect(res.status, route).toBe(200);
      expect(res.headers['content-type']).toMatch(/text\/html/);
      expect(res.body).toContain('<div id="root">');
      const csp = String(res.headers['content-security-policy']);
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("connect-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
      expect(res.headers['referrer-policy']).toBe('no-referrer');
    }
  });

  it('loads only its own assets, served with immutable caching; a missing asset is a 404, not the page', async () => {
    const html = (await rawGet(`${gw.url}/app`)).body;
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!).filter((u) => !u.startsWith('data:'));
    expect(assets.length).toBeGreaterThanOrEqual(2);
    for (const asset of assets) {
      expect(asset.startsWith('/app/assets/'), asset).toBe(true);
      const res = await rawGet(`${gw.url}${asset}`);
      expect(res.status, asset).toBe(200);
      expect(res.headers['cache-control']).toContain('immutable');
    }
    // No script or stylesheet from anywhere else, and none inline (the CSP would refuse it).
    expect(html).not.toMatch(/<script(?![^>]*src=)[^>]*>/);
    const missing = await rawGet(`${gw.url}/app/assets/nope.js`);
    expect(missing.status).toBe(404);
    expect(missing.body).not.toContain('<div id="root">');
  });

  it('sends its scripts and styles brotli- or gzip-encoded to a browser that asks, the same bytes once decoded, and plain to one that does not', async () => {
    const html = (await rawGet(`${gw.url}/app`)).body;
    const assets = [...html.matchAll(/(?:src|href)="(\/app\/assets\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThanOrEqual(2);
    for (const asset of assets) {
      const plain = await getBytes(`${gw.url}${asset}`, {});
      expect(plain.status).toBe(200);
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(plain.headers.vary).toMatch(/accept-encoding/i);
      for (const [asked, encoding, decode] of [
        ['gzip, deflate, br', 'br', zlib.brotliDecompressSync],
        ['gzip', 'gzip', zlib.gunzipSync],
      ] as const) {
        const res = await getBytes(`${gw.url}${asset}`, { 'accept-encoding': asked });
        expect(res.status, asset).toBe(200);
        expect(res.headers['content-encoding']).toBe(encoding);
        expect(res.headers['content-type']).toBe(plain.headers['content-type']);
        expect(res.headers['cache-control']).toContain('immutable');
        expect(res.headers.vary).toMatch(/accept-encoding/i);
        expect(res.body.length).toBeLessThan(plain.body.length / 2);
        expect(decode(res.body).equals(plain.body)).toBe(true);
        // A browser revalidating its copy gets a 304 without the bytes.
        const again = await getBytes(`${gw.url}${asset}`, { 'accept-encoding': asked, 'if-none-match': String(res.headers.etag) });
        expect(again.status).toBe(304);
        expect(again.body.length).toBe(0);
      }
      // Refusing both encodings gets the plain file.
      const refused = await getBytes(`${gw.url}${asset}`, { 'accept-encoding': 'br;q=0, gzip;q=0' });
      expect(refused.headers['content-encoding']).toBeUndefined();
      expect(refused.body.equals(plain.body)).toBe(true);
    }
    // Names outside the build are not looked for, encoded or not.
    for (const name of ['nope.js', '..%2F..%2Fpackage.json', '%2E%2E/index.html', '../index.html']) {
      const res = await getBytes(`${gw.url}/app/assets/${name}`, { 'accept-encoding': 'br, gzip' });
      expect(res.headers['content-encoding'], name).toBeUndefined();
      expect(res.body.toString(), name).not.toContain('"name": "flowgate"');
    }
  });

  it('the committed build matches the source (run `npm run build:web` after changing web/)', () => {
    const built = fs.readFileSync(path.resolve('web/dist', SOURCE_HASH_FILE), 'utf8').trim();
    expect(built, 'web/dist is stale: run npm run build:web and commit web/dist').toBe(dashboardSourceHash());
  });
});

// Each `flowgate open` starts a CLI process that opens the data directory: seconds apiece on a busy machine.
describe('flowgate open', { timeout: 120_000 }, () => {
  it('prints a one-time link whose token signs in once as the owner, is stored hashed, and is audited', async () => {
    const link = await openLink(gw.dataDir, gw.url);
    expect(link).toMatch(new RegExp(`^${gw.url}/app/link#token=[A-Za-z0-9_-]{40,}$`));
    const token = tokenOf(link);
    const { store } = gw.gateway.services;
    const rows = await store.selectFrom('sign_in_links').selectAll().execute();
    expect(JSON.stringify(rows)).not.toContain(token);
    expect(rows.map((r) => r.token_hash)).toContain(tokenHash(token));

    // Fetching the link (as a mail or chat link scanner would) consumes nothing: the token is in the fragment.
    expect((await rawGet(link.replace(/#.*/, ''))).status).toBe(200);

    const client = browserClient(gw.url);
    const used = await client.fetch('/api/auth/link', { method: 'POST', json: { token } });
    expect(used.status).toBe(200);
    expect(used.headers.get('set-cookie')).toMatch(/flowgate_session=.+HttpOnly/i);
    const session = await client.fetch('/api/auth/session');
    expect(session.status).toBe(200);
    const { organization, owner } = await gw.gateway.services.organizations.ensure('default');
    expect(session.body).toMatchObject({ user: { id: owner.id }, organization: { id: organization.id, role: 'owner' } });

    const again = await browserClient(gw.url).fetch('/api/auth/link', { method: 'POST', json: { token } });
    expect(again.status).toBe(401);
    expect(again.body).toMatchObject({ code: 'sign_in_link_invalid' });
    expect(again.headers.get('set-cookie')).toBeNull();

    const audit = await store
      .selectFrom('audit_log')
      .select(['action', 'actor_kind', 'outcome', 'details'])
      .where('organization_id', '=', organization.id)
      .execute();
    expect(audit).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ action: 'sign_in_link_created', actor_kind: 'cli' }),
        expect.objectContaining({ action: 'sign_in', actor_kind: 'session', details: expect.stringContaining('"method":"link"') }),
      ]),
    );
    const failures = await store.selectFrom('audit_log').select(['action', 'details']).where('action', '=', 'sign_in_failed').execute();
    expect(failures.some((f) => f.details?.includes('"method":"link"'))).toBe(true);
    expect(JSON.stringify(await store.selectFrom('audit_log').selectAll().execute())).not.toContain(token);
  });

  it('refuses an expired link, a made-up token and a request without Origin', async () => {
    const token = tokenOf(await openLink(gw.dataDir, gw.url));
    await gw.gateway.services.store
      .updateTable('sign_in_links')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('token_hash', '=', tokenHash(token))
      .execute();
    const expired = await browserClient(gw.url).fetch('/api/auth/link', { method: 'POST', json: { token } });
    expect(expired.status).toBe(401);
    expect(expired.body.code).toBe('sign_in_link_invalid');

    const madeUp = await browserClient(gw.url).fetch('/api/auth/link', { method: 'POST', json: { token: 'x'.repeat(43) } });
    expect(madeUp.status).toBe(401);

    const fresh = tokenOf(await openLink(gw.dataDir, gw.url));
    const noOrigin = await fetchJson(`${gw.url}/api/auth/link`, { method: 'POST', body: JSON.stringify({ token: fresh }) });
    expect(noOrigin.status).toBe(403);
    expect(noOrigin.body.code).toBe('MISSING_OR_NULL_ORIGIN');
    // Still usable after the refused attempt.
    expect((await browserClient(gw.url).fetch('/api/auth/link', { method: 'POST', json: { token: fresh } })).status).toBe(200);

    const empty = await browserClient(gw.url).fetch('/api/auth/link', { method: 'POST', json: {} });
    expect(empty.status).toBe(400);
  });

  it('two concurrent uses of one link open exactly one session', async () => {
    const token = tokenOf(await openLink(gw.dataDir, gw.url));
    const results = await Promise.all(Array.from({ length: 5 }, () => browserClient(gw.url).fetch('/api/auth/link', { method: 'POST', json: { token } })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 401, 401, 401, 401]);
  });

  it('--org signs in to that organization as its owner (a wallet account), and an unknown organization is a usage error', async () => {
    const wallet = privateKeyToAccount(generatePrivateKey());
    const signedUp = await signIn(browserClient(gw.url), gw.url, wallet);
    const token = tokenOf(await openLink(gw.dataDir, gw.url, signedUp.organization.slug));
    const client = browserClient(gw.url);
    expect((await client.fetch('/api/auth/link', { method: 'POST', json: { token } })).status).toBe(200);
    const session = await client.fetch('/api/auth/session');
    expect(session.body).toMatchObject({
      user: { walletAddress: expect.stringMatching(new RegExp(wallet.address, 'i')) },
      organization: { slug: signedUp.organization.slug },
    });

    const unknown = await runCli(['open', '--org', 'no-such-org'], { FLOWGATE_DATA_DIR: gw.dataDir, FLOWGATE_BASE_URL: gw.url });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('No organization "no-such-org"');
    expect(unknown.stdout).not.toContain('http');
  });

  it('a link stops working when its user is no longer a member', async () => {
    const wallet = privateKeyToAccount(generatePrivateKey());
    const signedUp = await signIn(browserClient(gw.url), gw.url, wallet);
    const token = tokenOf(await openLink(gw.dataDir, gw.url, signedUp.organization.slug));
    await gw.gateway.services.store.deleteFrom('memberships').where('user_id', '=', signedUp.user.id).execute();
    const res = await browserClient(gw.url).fetch('/api/auth/link', { method: 'POST', json: { token } });
    expect(res.status).toBe(401);
  });
});
