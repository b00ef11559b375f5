import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discoverAuthorizationServerMetadata, exchangeAuthorization, registerClient, startAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { fetchJson, startTestGateway, tempDir, type TestGateway } from './helpers/gateway.ts';
import { browserUnavailable, launchChromium } from './helpers/browser.ts';

/**
 * The consent page in headless Chromium: wallet sign-in on the page (a test
 * wallet injected as window.ethereum, signing with a real key), then Approve
 * and Deny clicked, each landing on the client's loopback redirect URI with
 * `state` intact. FLOWGATE_UPDATE_SCREENSHOTS=1 refreshes docs/consent-page.png.
 */

const unavailable = browserUnavailable();
if (unavailable) console.warn(`Skipping the consent-page browser tests: ${unavailable}`);

describe.skipIf(unavailable !== undefined)('consent page in a browser', { timeout: 120_000 }, () => {
  let gw: TestGateway;
  let redirect: http.Server;
  let redirectUri: string;
  const landed: URL[] = [];
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  const account = privateKeyToAccount(generatePrivateKey());

  beforeAll(async () => {
    gw = await startTestGateway();
    // The client's own loopback redirect URI (a native client's callback).
    redirect = http.createServer((req, res) => {
      const url = new URL(req.url!, redirectUri);
      if (url.pathname === '/callback') landed.push(url); // not the browser's /favicon.ico
      res.setHeader('content-type', 'text/html');
      res.end('<h1>Back at the client</h1>');
    });
    await new Promise<void>((resolve) => redirect.listen(0, '127.0.0.1', resolve));
    redirectUri = `http://127.0.0.1:${(redirect.address() as AddressInfo).port}/callback`;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    redirect?.close();
    await gw?.close();
  });

  async function authorizationUrl(state: string) {
    const metadata = await discoverAuthorizationServerMetadata(gw.url);
    const client = await registerClient(gw.url, { metadata, clientMetadata: { client_name: 'Browser Test Connector', redirect_uris: [redirectUri] } });
    const resource = new URL(`${gw.url}/mcp`);
    const started = await startAuthorization(gw.url, { metadata, clientInformation: client, redirectUrl: redirectUri, scope: 'mcp:write', state, resource });
    return { ...started, metadata, client, resource };
  }

  async function newPage() {
    const context = await browser.newContext({ viewport: { width: 900, height: 900 } });
    const page = await context.newPage();
    // A browser wallet: EIP-1193 requests answered with the test account, which signs for real.
    await page.exposeFunction('testWalletSign', (message: string) => account.signMessage({ message }));
    await page.addInitScript((address: string) => {
      (window as any).ethereum = {
        request: async ({ method, params }: { method: string; params?: unknown[] }) => {
          if (method === 'eth_requestAccounts' || method === 'eth_accounts') return [address];
          if (method === 'eth_chainId') return '0x1';
          if (method === 'personal_sign') return (window as any).testWalletSign(params![0]);
          throw new Error(`unsupported ${method}`);
        },
      };
    }, account.address);
    return { context, page };
  }

  it('signs in with the wallet on the page, shows the consent, and Approve returns a code with state intact', async () => {
    const { authorizationUrl: url, codeVerifier, metadata, client, resource } = await authorizationUrl('approve-state-1');
    const { context, page } = await newPage();
    await page.goto(url.href);
    await page.getByRole('button', { name: 'Sign in with your wallet' }).click();
    await page.waitForSelector('#approve');

    expect(await page.textContent('#client-name')).toBe('Browser Test Connector');
    expect(await page.textContent('#redirect-host')).toBe(new URL(redirectUri).host);
    expect(await page.textContent('#resource')).toBe(`${gw.url}/mcp`);
    expect(await page.textContent('#scope')).toContain('mcp:write');
    expect(await page.textContent('#organization')).toMatch(/\(\S+\)/);
    const shot = path.join(tempDir(), 'consent.png'); // removed with the file's other temporary directories
    await page.screenshot({ path: shot, fullPage: true });
    expect(fs.readFileSync(shot).subarray(1, 4).toString()).toBe('PNG');
    if (process.env.FLOWGATE_UPDATE_SCREENSHOTS === '1') fs.copyFileSync(shot, path.resolve(import.meta.dirname, '../docs/consent-page.png'));

    await page.click('#approve');
    await page.waitForURL((u) => u.href.startsWith(redirectUri));
    const back = landed.at(-1)!;
    expect(back.searchParams.get('state')).toBe('approve-state-1');
    const code = back.searchParams.get('code')!;
    expect(code).toBeTruthy();

    const tokens = await exchangeAuthorization(gw.url, { metadata, clientInformation: client, authorizationCode: code, codeVerifier, redirectUri, resource });
    expect(tokens.scope).toBe('mcp:write');
    const probe = await fetchJson(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.access_token}`, accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(probe.status).toBe(200);
    expect(probe.body.result.tools.map((t: { name: string }) => t.name)).toContain('list_workflows');
    await context.close();
  });

  it('Deny returns access_denied with state intact, and no code', async () => {
    const { authorizationUrl: url } = await authorizationUrl('deny-state-2');
    const { context, page } = await newPage();
    await page.goto(url.href);
    await page.getByRole('button', { name: 'Sign in with your wallet' }).click();
    await page.waitForSelector('#deny');
    await page.click('#deny');
    await page.waitForURL((u) => u.href.startsWith(redirectUri));
    const back = landed.at(-1)!;
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('state')).toBe('deny-state-2');
    expect(back.searchParams.get('code')).toBeNull();
    await context.close();
  });

  it('refuses to be framed by another site', async () => {
    const { authorizationUrl: url } = await authorizationUrl('frame-state');
    const res = await fetch(url);
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  });
});
