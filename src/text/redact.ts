/**
 * The one place that decides what a credential looks like. Used for step
 * inputs and outputs in execution logs, for workflow graphs shown to anyone
 * but their owner (public listing, another organization's read), and by the
 * HTTP client to drop credential headers on a cross-origin redirect.
 */

import { echoForms } from './echo-forms.ts';

export const REDACTED = '[REDACTED]';

/** Words that mark a name as a credential wherever they appear in it (`X-Custom-Auth`, `sessionId`, `set-cookie`). */
const STRONG_WORDS = new Set([
  'auth',
  'oauth',
  'authorization',
  'authentication',
  'password',
  'passwd',
  'passphrase',
  'pass',
  'pwd',
  'secret',
  'secrets',
  'credential',
  'credentials',
  'cookie',
  'cookies',
  'session',
  'mnemonic',
  'seed',
  'jwt',
  'bearer',
  'signature',
  'sig',
  // Run-together spellings of the weak pairs below.
  'apikey',
  'apitoken',
  'accesstoken',
  'authtoken',
  'refreshtoken',
  'privatekey',
  'secretkey',
  'clientsecret',
  'sessionid',
]);
/**
 * `token` and `key` name credentials only as the last word (`X-Api-Key`,
 * `accessToken`, `token`): `tokenConfig`, `tokenAddress` and `keyId` are not
 * secrets, and in web3 a "token" is often a contract, so these names hide
 * scalar values only and never an address.
 */
const WEAK_LAST_WORDS = new Set(['token', 'key']);
const PUBLIC_QUALIFIERS = new Set(['public']);

// `APIKey` → `API Key` with a lookahead: `([A-Z]+)([A-Z][a-z])` rescanned a run of capitals from each of its letters (quadratic).
function wordsOf(name: string): string[] {
  return name
    .replace(/([A-Z])(?=[A-Z][a-z])/g, '$1 ')
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

type Strength = 'strong' | 'weak' | undefined;

/** Names repeat on every step of every run (config keys): classified once. Bounded, since header names come from users. */
const strengthCache = new Map<string, Strength>();

/** Longer names are classified each time, not cached: 5000 cached names of 256 KB would hold over a gigabyte. */
const MAX_CACHED_NAME = 256;

function strengthOf(name: string): Strength {
  if (name.length > MAX_CACHED_NAME) return classify(name);
  let strength = strengthCache.get(name);
  if (strength === undefined && !strengthCache.has(name)) {
    strength = classify(name);
    if (strengthCache.size >= 5000) strengthCache.clear();
    strengthCache.set(name, strength);
  }
  return strength;
}

function classify(name: string): Strength {
  const words = wordsOf(name);
  if (words.some((w) => STRONG_WORDS.has(w))) return 'strong';
  const last = words.at(-1);
  if (last && WEAK_LAST_WORDS.has(last) && !PUBLIC_QUALIFIERS.has(words.at(-2) ?? '')) return 'weak';
  return undefined;
}

/** Whether a header, field or query parameter name carries a credential (auth, token, key, secret, cookie, session, password...). */
export function isCredentialName(name: string): boolean {
  return strengthOf(name) !== undefined;
}

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
/** A value made only of template references (optionally after an auth scheme) holds no secret itself. */
const TEMPLATE_ONLY = /^\s*(?:(?:bearer|basic|token|bot)\s+)?(?:\{\{[^{}]*\}\}\s*)+$/i;
const AUTH_SCHEME = /^\s*(?:bearer|basic|token|bot|digest)\s+(\S+)\s*$/i;
/** Shorter values are not searched for in outputs: they would match innocent text. */
const MIN_ECHO_LENGTH = 6;

function keepsScalar(value: unknown): boolean {
  if (value === null || value === undefined || value === '' || typeof value === 'boolean') return true;
  if (typeof value !== 'string') return false;
  return EVM_ADDRESS.test(value.trim()) || TEMPLATE_ONLY.test(value);
}

export interface Redaction<T = unknown> {
  value: T;
  /** Where something was hidden, e.g. `config.httpHeaders.Authorization`, `config.endpoint?api_key`, `config.endpoint@userinfo`. */
  paths: string[];
  /** The hidden values, for finding them again in what a step returned (see redactOutput). */
  secrets: string[];
}

class Collector {
  readonly paths: string[] = [];
  readonly secrets = new Set<string>();

  hide(path: string, value: unknown): string {
    this.paths.push(path);
    this.remember(value);
    return REDACTED;
  }

  remember(value: unknown): void {
    const json = typeof value === 'string' ? parseJson(value) : undefined;
    if (json !== undefined) {
      this.add(value as string);
      this.remember(json);
    } else if (typeof value === 'string' || typeof value === 'number') {
      const text = String(value);
      this.add(text);
      const credential = AUTH_SCHEME.exec(text)?.[1];
      if (credential) this.add(credential);
    } else if (value && typeof value === 'object') {
      Object.values(value).forEach((item) => this.remember(item));
    }
  }

  private add(text: string): void {
    if (text.length < MIN_ECHO_LENGTH) return;
    for (const form of echoForms(text, MIN_ECHO_LENGTH)) this.secrets.add(form);
  }
}

const keyPath = (base: string, key: string) => (/^[A-Za-z_$][\w$-]*$/.test(key) ? (base ? `${base}.${key}` : key) : `${base}[${JSON.stringify(key)}]`);

/** Redacts credentials anywhere in a value (step config, node, header map). `at` prefixes the reported paths. */
export function redact<T>(value: T, at = ''): Redaction<T> {
  const c = new Collector();
  const out = walk(value, at, c, 0) as T;
  return { value: out, paths: c.paths, secrets: [...c.secrets].sort((a, b) => b.length - a.length) };
}

/** Shorthand when only the redacted value is wanted. */
export const redactSecrets = <T>(value: T): T => redact(value).value;

function walk(value: unknown, path: string, c: Collector, depth: number): unknown {
  if (depth > 20) return '[…]';
  if (typeof value === 'string') return redactText(value, path, c, depth);
  if (Array.isArray(value)) return value.map((item, i) => walk(item, `${path}[${i}]`, c, depth + 1));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const at = keyPath(path, key);
    const strength = strengthOf(key);
    const scalar = item === null || typeof item !== 'object';
    if (strength === 'strong' && !keepsScalar(item)) out[key] = c.hide(at, item);
    else if (strength === 'weak' && scalar && !keepsScalar(item)) out[key] = c.hide(at, item);
    else out[key] = walk(item, at, c, depth + 1);
  }
  return out;
}

const isJsonText = (text: string) => /^\s*[[{]/.test(text);

function parseJson(text: string): unknown {
  if (!isJsonText(text)) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Header maps and bodies often arrive as JSON text (`httpHeaders`,
 * `httpBody`): redacted inside, and left byte-identical when nothing in them
 * is a credential.
 */
function walkJsonText(text: string, path: string, c: Collector, depth: number): string {
  const parsed = parseJson(text);
  if (parsed === undefined) return redactUrls(redactLooseJson(text, path, c), path, c);
  const before = c.paths.length;
  const out = walk(parsed, path, c, depth + 1);
  return c.paths.length === before ? text : JSON.stringify(out);
}

/**
 * `name: value` pairs of JSON-like text that does not parse (a typo in a header map must not publish its token).
 * A name starts only where a run of name characters starts (the lookbehind): trying it again from every later
 * character of the run found the same answer, in quadratic time (`{` + 40k letters took seconds).
 */
const LOOSE_PAIR = /(["']?)(?<![\w.-])([\w.-]+)\1(\s*:\s*)("(?:[^"\\]|\\.)*"|'[^']*'|[^,}\n]+)/g;

function redactLooseJson(text: string, path: string, c: Collector): string {
  return text.replace(LOOSE_PAIR, (pair, quote: string, name: string, colon: string, raw: string) => {
    const quoted = /^["']/.test(raw);
    const value = quoted ? raw.slice(1, -1) : raw.trim();
    if (!isCredentialName(name) || keepsScalar(value)) return pair;
    c.hide(keyPath(path, name), value);
    return `${quote}${name}${quote}${colon}${quoted ? `${raw[0]}${REDACTED}${raw[0]}` : REDACTED}`;
  });
}

function redactText(text: string, path: string, c: Collector, depth: number): string {
  if (TEMPLATE_ONLY.test(text)) return text;
  if (isJsonText(text)) return walkJsonText(text, path, c, depth);
  if (FORM_BODY.test(text)) return redactParams(text, (name) => `${keyPath(path, name)}`, c);
  return redactUrls(text, path, c);
}

const URL_IN_TEXT = /\bhttps?:\/\/[^\s"'<>`]+/gi;
const USERINFO = /^(https?:\/\/)([^/?#@\s]+)@/i;
/** `a=1&b=2` with no spaces: a form-encoded body. */
const FORM_BODY = /^[^=&\s?/]+=[^&\s]*(?:&[^=&\s]+=[^&\s]*)*$/;

/**
 * URLs that are their own credential (capability URLs): whoever reads one can post as its owner. The part after
 * each prefix is hidden. Before, a Slack or Discord webhook typed into a step showed whole in a public graph and
 * in run logs, since neither its field name nor a query parameter said it was secret.
 */
const CAPABILITY_URLS: readonly RegExp[] = [
  /^(https?:\/\/hooks\.slack\.com\/(?:services|workflows|triggers)\/)([^?#]+)/i,
  /^(https?:\/\/(?:[\w-]+\.)?discord(?:app)?\.com\/api\/(?:v\d+\/)?webhooks\/\d+\/)([^/?#]+)/i,
  /^(https?:\/\/api\.telegram\.org\/(?:file\/)?bot)([^/?#]+)/i,
  /^(https?:\/\/[\w-]+\.webhook\.office\.com\/)([^?#]+)/i,
  /^(https?:\/\/hooks\.zapier\.com\/hooks\/catch\/)([^?#]+)/i,
];

/** In every URL of a text: userinfo (`https://user:pass@host`), capability paths and credential query parameters (`?api_key=`). */
function redactUrls(text: string, path: string, c: Collector): string {
  if (!text.includes('://')) return text;
  return text.replace(URL_IN_TEXT, (url) => {
    let out = url.replace(USERINFO, (_m, scheme: string, userinfo: string) => {
      if (TEMPLATE_ONLY.test(userinfo)) return `${scheme}${userinfo}@`;
      c.hide(`${path}@userinfo`, userinfo);
      userinfo.split(':').forEach((part) => c.remember(part));
      return `${scheme}${REDACTED}@`;
    });
    for (const capability of CAPABILITY_URLS) {
      out = out.replace(capability, (whole, prefix: string, secret: string) => {
        if (TEMPLATE_ONLY.test(secret)) return whole;
        c.hide(`${path}@path`, secret);
        c.remember(secret);
        return `${prefix}${REDACTED}`;
      });
    }
    const query = out.indexOf('?');
    if (query >= 0) {
      const hash = out.indexOf('#', query);
      const end = hash >= 0 ? hash : out.length;
      out = out.slice(0, query + 1) + redactParams(out.slice(query + 1, end), (name) => `${path}?${name}`, c) + out.slice(end);
    }
    return out;
  });
}

function redactParams(params: string, pathOf: (name: string) => string, c: Collector): string {
  return params
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq <= 0) return pair;
      const name = safeDecode(pair.slice(0, eq));
      const value = pair.slice(eq + 1);
      if (!isCredentialName(name) || keepsScalar(safeDecode(value))) return pair;
      c.hide(pathOf(name), value);
      return `${pair.slice(0, eq)}=${REDACTED}`;
    })
    .join('&');
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/**
 * A step's output as logged: credential response headers (`set-cookie`,
 * an echoed `x-auth-token`) hidden, and every secret of the step's input
 * replaced wherever it reappears (an endpoint echoing the Authorization value,
 * the final URL keeping `?api_key=`).
 */
export function redactOutput(output: unknown, secrets: readonly string[]): unknown {
  let out = output;
  if (output && typeof output === 'object' && !Array.isArray(output)) {
    const { headers, url } = output as { headers?: unknown; url?: unknown };
    if (headers && typeof headers === 'object' && !Array.isArray(headers)) {
      const hidden = Object.fromEntries(
        Object.entries(headers).map(([name, value]) => [name, isCredentialName(name) && !keepsScalar(value) ? REDACTED : value]),
      );
      out = { ...(out as object), headers: hidden };
    }
    // The final URL after redirects: its query can carry keys the input never had.
    if (typeof url === 'string') out = { ...(out as object), url: redactUrls(url, 'url', new Collector()) };
  }
  return secrets.length === 0 ? out : replaceEchoes(out, secrets, 0);
}

/** Replaces known secret values anywhere in a value (a run's result). */
export function redactEchoesIn(value: unknown, secrets: readonly string[]): unknown {
  return secrets.length === 0 ? value : replaceEchoes(value, secrets, 0);
}

/** Replaces known secret values inside a text (an error message, say). */
export function redactEchoes(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  return out;
}

/** Deeper than any real response; past it the rest is dropped rather than searched (fail closed). */
const MAX_OUTPUT_DEPTH = 64;

function replaceEchoes(value: unknown, secrets: readonly string[], depth: number): unknown {
  if (depth > MAX_OUTPUT_DEPTH) return '[…]';
  if (typeof value === 'string') return redactEchoes(value, secrets);
  if (Array.isArray(value)) return value.map((item) => replaceEchoes(item, secrets, depth + 1));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, replaceEchoes(item, secrets, depth + 1)]));
}
