import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { BrowserClient } from './session.ts';

/** The consent page's pending-request handle (the hidden form field). */
export function consentHandle(html: string): string {
  const handle = /name="request" value="([^"]+)"/.exec(html)?.[1];
  if (!handle) throw new Error(`no consent form in the page: ${html.slice(0, 300)}`);
  return handle;
}

/**
 * An MCP SDK OAuthClientProvider as a desktop connector would implement it,
 * except that "opening the browser" is the signed-in user's browser client:
 * it loads the authorization URL (the consent page), clicks Approve or Deny
 * through the real form endpoint, and keeps the redirect it lands on.
 */
export class TestOAuthProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  /** The consent page's HTML and status, and the redirect that followed the decision. */
  consent?: { status: number; html: string };
  landed?: URL;
  authorizationUrl?: URL;
  stateValue = `state-${Math.random().toString(36).slice(2)}`;

  constructor(
    private readonly browser: BrowserClient | undefined,
    private readonly options: { redirectUrl?: string; decision?: 'approve' | 'deny'; scope?: string; clientName?: string } = {},
  ) {}

  get redirectUrl() {
    return this.options.redirectUrl ?? 'http://127.0.0.1:53682/callback';
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.options.clientName ?? 'Test Connector',
      redirect_uris: [String(this.redirectUrl)],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      ...(this.options.scope ? { scope: this.options.scope } : {}),
    };
  }
  state() {
    return this.stateValue;
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }

  async redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
    if (!this.browser) return;
    const page = await this.browser.fetch(url.href, { redirect: 'manual' });
    if (page.status === 302) {
      this.landed = new URL(page.headers.get('location')!);
      return;
    }
    this.consent = { status: page.status, html: String(page.body) };
    if (page.status !== 200 || !this.consent.html.includes('name="request"')) return;
    const decided = await this.browser.fetch('/authorize/decision', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ request: consentHandle(this.consent.html), decision: this.options.decision ?? 'approve' }).toString(),
      redirect: 'manual',
    });
    if (decided.status !== 302) throw new Error(`decision: ${decided.status} ${String(decided.body).slice(0, 300)}`);
    this.landed = new URL(decided.headers.get('location')!);
  }

  /** The authorization code the redirect carried (and a check that `state` came back intact). */
  code(): string {
    if (!this.landed) throw new Error('no redirect yet');
    if (this.landed.searchParams.get('state') !== this.stateValue) throw new Error(`state not returned intact: ${this.landed.href}`);
    const code = this.landed.searchParams.get('code');
    if (!code) throw new Error(`no code in ${this.landed.href}`);
    return code;
  }
}
