/**
 * The forms in which a secret comes back from a service that quotes a request:
 * as sent, percent-decoded or percent-encoded (a query value, a form body),
 * escaped inside a JSON string, in base64 (a debugging endpoint showing bytes),
 * and for `user:password` (URL credentials, Basic auth) the base64 the
 * Authorization header carried. Exact matching alone let `s3cr+t/key=` through
 * as `s3cr%2Bt%2Fkey%3D`. Forms shorter than `minLength` are left out: they
 * would match ordinary text.
 */
export function echoForms(secret: string, minLength: number): string[] {
  const forms = new Set<string>([secret]);
  const add = (form: string | undefined) => {
    if (form !== undefined && form.length >= minLength) forms.add(form);
  };
  // Each encoding of the value as written and as percent-decoded (`bob:pa%20ss` is sent as Basic `bob:pa ss`).
  const decoded = safe(() => decodeURIComponent(secret));
  for (const text of decoded !== undefined && decoded !== secret ? [secret, decoded] : [secret]) {
    add(text);
    add(encodeURIComponent(text));
    add(encodeURIComponent(text).replace(/%20/g, '+'));
    add(text.split('/').map(encodeURIComponent).join('/')); // a URL path, its slashes kept
    add(JSON.stringify(text).slice(1, -1));
    const base64 = Buffer.from(text, 'utf8').toString('base64');
    add(base64);
    add(base64.replace(/=+$/, ''));
    add(Buffer.from(text, 'utf8').toString('base64url'));
  }
  // A URL with credentials: its password, and the Basic header a client sends for it.
  const url = safe(() => new URL(secret));
  if (url?.password) {
    const user = safe(() => decodeURIComponent(url.username)) ?? url.username;
    const password = safe(() => decodeURIComponent(url.password)) ?? url.password;
    add(password);
    add(Buffer.from(`${user}:${password}`, 'utf8').toString('base64'));
  }
  return [...forms];
}

function safe<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}
