import type { KeyScope } from '../../auth/principal.ts';

/**
 * The pages /authorize shows a person: the consent page (who asks, for what,
 * on whose behalf) and, without a session, wallet sign-in. Plain HTML served
 * by the gateway; every value is escaped, the one script runs under a CSP nonce,
 * and no other site may frame the page (clickjacking).
 */

const escapeHtml = (value: string) => value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const SCOPE_TEXT: Record<KeyScope, string> = {
  'mcp:read': 'Read your workflows, executions and chain data; run simulations',
  'mcp:write': 'Everything read allows, plus create and change workflows, start runs and broadcast transactions',
  'mcp:admin': 'Everything write allows, plus administer the organization (API keys, members, connected clients)',
};
const INCLUDED: Record<KeyScope, KeyScope[]> = {
  'mcp:read': ['mcp:read'],
  'mcp:write': ['mcp:read', 'mcp:write'],
  'mcp:admin': ['mcp:read', 'mcp:write', 'mcp:admin'],
};

const STYLE = `
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;background:#f4f5f7;color:#1d2330;margin:0;display:flex;justify-content:center}
main{background:#fff;max-width:34rem;margin:3rem 1rem;padding:2rem;border-radius:12px;box-shadow:0 2px 12px rgba(0,0,0,.08)}
h1{font-size:1.35rem;margin:0 0 1rem}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.5rem 1rem;margin:1rem 0}
dt{color:#5b6475}dd{margin:0;overflow-wrap:anywhere}
ul{margin:.25rem 0;padding-left:1.1rem}li{margin:.2rem 0}
code{background:#eef0f4;padding:0 .25rem;border-radius:4px}
.buttons{display:flex;gap:.75rem;margin-top:1.5rem}
button{font-size:1rem;padding:.6rem 1.2rem;border-radius:8px;border:1px solid #c5cad3;background:#fff;cursor:pointer}
button.primary{background:#2f5bea;border-color:#2f5bea;color:#fff}
.note{color:#5b6475;font-size:.9rem}.error{color:#b42318}`;

function page(title: string, body: string, nonce?: string, script?: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)} · Flowgate</title><style>${STYLE}</style></head>
<body><main>${body}</main>${script && nonce ? `<script nonce="${nonce}">${script}</script>` : ''}</body></html>`;
}

/** Headers every one of these pages goes out with. */
export function pageHeaders(nonce: string): Record<string, string> {
  return {
    'Content-Type': 'text/html; charset=utf-8',
    'Cache-Control': 'no-store',
    'Content-Security-Policy': `default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-${nonce}'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'`,
    'X-Frame-Options': 'DENY',
    // Not no-referrer: Chromium then sends `Origin: null` on the form post, which the decision endpoint refuses.
    'Referrer-Policy': 'same-origin',
  };
}

export interface ConsentView {
  clientName: string;
  clientId: string;
  redirectHost: string;
  scope: KeyScope;
  organization: { name: string; slug: string };
  role: string;
  resource: string;
  requestHandle: string;
  decisionPath: string;
}

export function consentPage(view: ConsentView): string {
  const scopes = INCLUDED[view.scope].map((s) => `<li><code>${s}</code>: ${escapeHtml(SCOPE_TEXT[s])}</li>`).join('');
  return page(
    `Connect ${view.clientName}`,
    `<h1>Connect <span id="client-name">${escapeHtml(view.clientName)}</span> to Flowgate?</h1>
<p>This application asks to act for you. Approve only if you started this connection.</p>
<dl>
<dt>Application</dt><dd>${escapeHtml(view.clientName)}<br><span class="note">client id ${escapeHtml(view.clientId)}</span></dd>
<dt>Sends you back to</dt><dd id="redirect-host">${escapeHtml(view.redirectHost)}</dd>
<dt>Acting for</dt><dd id="organization">${escapeHtml(view.organization.name)} (<code>${escapeHtml(view.organization.slug)}</code>); your role there: ${escapeHtml(view.role)}</dd>
<dt>Resource</dt><dd id="resource">${escapeHtml(view.resource)}</dd>
<dt>Scope</dt><dd id="scope"><code>${view.scope}</code><ul>${scopes}</ul></dd>
</dl>
<p class="note">Access lasts one hour at a time and renews for up to 30 days; revoke it whenever you like under connected clients (<code>flowgate oauth list</code>, <code>GET /api/oauth/clients</code>).</p>
<form method="post" action="${escapeHtml(view.decisionPath)}">
<input type="hidden" name="request" value="${escapeHtml(view.requestHandle)}">
<div class="buttons"><button class="primary" type="submit" name="decision" value="approve" id="approve">Approve</button>
<button type="submit" name="decision" value="deny" id="deny">Deny</button></div>
</form>`,
  );
}

/**
 * Wallet sign-in (EIP-4361) in the page, through the browser wallet
 * (window.ethereum): nonce, message, personal_sign, verify, then this page
 * again with the new session.
 */
const SIGN_IN_SCRIPT = `
const status = document.getElementById('status');
document.getElementById('sign-in').addEventListener('click', async () => {
  try {
    if (!window.ethereum) throw new Error('No browser wallet found (window.ethereum). Install one, or sign in another way and reload this page.');
    const [address] = await window.ethereum.request({ method: 'eth_requestAccounts' });
    const chainId = parseInt(await window.ethereum.request({ method: 'eth_chainId' }), 16);
    const post = async (path, body) => {
      const res = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), credentials: 'same-origin' });
      const json = await res.json();
      if (!res.ok) throw new Error(json.error || ('HTTP ' + res.status));
      return json;
    };
    const { nonce } = await post('/api/auth/siwe/nonce', { walletAddress: address, chainId });
    const message = location.host + ' wants you to sign in with your Ethereum account:\\n' + address + '\\n\\nSign in to Flowgate\\n\\nURI: ' + location.origin +
      '\\nVersion: 1\\nChain ID: ' + chainId + '\\nNonce: ' + nonce + '\\nIssued At: ' + new Date().toISOString();
    const signature = await window.ethereum.request({ method: 'personal_sign', params: [message, address] });
    await post('/api/auth/siwe/verify', { message, signature, walletAddress: address, chainId });
    location.reload();
  } catch (error) {
    status.textContent = error.message;
    status.className = 'error';
  }
});`;

export function signInPage(view: { clientName: string; nonce: string }): string {
  return page(
    'Sign in',
    `<h1>Sign in to connect ${escapeHtml(view.clientName)}</h1>
<p>${escapeHtml(view.clientName)} asks to connect to your Flowgate organization. Sign in first; you will then see what it asks for and can approve or deny.</p>
<div class="buttons"><button class="primary" type="button" id="sign-in">Sign in with your wallet</button></div>
<p id="status" class="note" role="status"></p>`,
    view.nonce,
    SIGN_IN_SCRIPT,
  );
}

export function errorPage(message: string): string {
  return page('Authorization failed', `<h1>Authorization failed</h1><p class="error">${escapeHtml(message)}</p>`);
}
