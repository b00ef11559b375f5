import { NodeError } from './runners/types.ts';
import { parseTemplateBody, SYSTEM_BUILTINS, SYSTEM_NODE_ID, TEMPLATE_PATTERN } from './templates.ts';

/**
 * Template resolution: `{{@nodeId:Label.field}}` is replaced by a value found
 * by path lookup in an upstream node's output, never by evaluating code.
 */

export interface ResolveScope {
  /** Outputs of the nodes that already ran (in a For Each body: this iteration's view). */
  outputs: ReadonlyMap<string, unknown>;
  labelOf(nodeId: string): string | undefined;
  now: Date;
  /** Counts the text templates expand to (textBudget), throwing once there is too much; uncounted when absent. */
  countText?: (piece: string) => string;
}

/** A counter for ResolveScope.countText: the text one step's templates may expand to in all, refused before a larger string is made. */
export function textBudget(maxChars: number): (piece: string) => string {
  let left = maxChars;
  return (piece) => {
    left -= piece.length;
    if (left < 0) {
      throw new NodeError(
        `The templates in this step's config expand to more text than the run has left of its data limit (${maxChars} characters; FLOWGATE_RUN_DATA_LIMIT_BYTES). Refer to a smaller field, or to it in fewer places.`,
      );
    }
    return piece;
  };
}

const uncounted = (piece: string) => piece;

const MISSING = Symbol('missing');

function step(value: unknown, key: string): unknown {
  if (Array.isArray(value) && /^\d+$/.test(key)) return Number(key) < value.length ? value[Number(key)] : MISSING;
  if (value !== null && typeof value === 'object' && Object.prototype.hasOwnProperty.call(value, key)) return (value as Record<string, unknown>)[key];
  return MISSING;
}

/**
 * Walks `path` through `output`. Step outputs keep their payload under
 * `data`, so a path that does not start at the top level is also tried
 * under `data` (`Label.balance` finds `output.data.balance`).
 */
export function lookupPath(output: unknown, path: readonly string[]): unknown {
  const walk = (start: unknown) => path.reduce<unknown>((value, key) => (value === MISSING ? MISSING : step(value, key)), start);
  const direct = walk(output);
  if (direct !== MISSING || path.length === 0) return direct;
  const data = step(output, 'data');
  return data === MISSING ? MISSING : walk(data);
}

function systemValue(name: string, now: Date): unknown {
  switch (name) {
    case 'unixTimestamp':
      return Math.floor(now.getTime() / 1000);
    case 'unixTimestampMs':
      return now.getTime();
    case 'isoTimestamp':
      return now.toISOString();
    default:
      return MISSING;
  }
}

/** The value one template refers to; a NodeError naming the template when it cannot be found. */
export function resolveTemplate(raw: string, body: string, scope: ResolveScope): unknown {
  const parsed = parseTemplateBody(body, (id) => (id === SYSTEM_NODE_ID ? 'System' : scope.labelOf(id)));
  if ('error' in parsed) throw new NodeError(`Template ${raw} is malformed: ${parsed.error}`);
  if (parsed.nodeId === SYSTEM_NODE_ID) {
    const value = systemValue(parsed.path.join('.'), scope.now);
    if (value === MISSING) throw new NodeError(`Template ${raw} names an unknown built-in; use one of ${SYSTEM_BUILTINS.join(', ')}.`);
    return value;
  }
  if (!scope.outputs.has(parsed.nodeId)) {
    throw new NodeError(
      `Template ${raw} refers to node "${parsed.nodeId}", which has not run before this step (it is missing, downstream, or on a branch that was not taken).`,
    );
  }
  const output = scope.outputs.get(parsed.nodeId);
  const value = lookupPath(output, parsed.path);
  if (value === MISSING) {
    const available =
      output && typeof output === 'object'
        ? Object.keys({ ...((output as { data?: object }).data ?? {}), ...(output as object) }).filter((k) => k !== 'data')
        : [];
    throw new NodeError(
      `Template ${raw} refers to "${parsed.path.join('.')}", which the output of node "${parsed.nodeId}" does not have. Available fields: ${available.join(', ') || '(none)'}.`,
    );
  }
  return value;
}

const asText = (value: unknown) => (typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value));

/** A string that is exactly one template keeps the value's type; templates inside text become text. */
export function resolveString(text: string, scope: ResolveScope): unknown {
  const matches = [...text.matchAll(TEMPLATE_PATTERN)];
  if (matches.length === 0) return text;
  if (matches.length === 1 && matches[0]![0] === text.trim()) return resolveTemplate(matches[0]![0], matches[0]![1]!, scope);
  const counted = scope.countText ?? uncounted;
  return text.replace(TEMPLATE_PATTERN, (raw, body: string) => counted(asText(resolveTemplate(raw, body, scope))));
}

/** Resolves every template anywhere in a config (nested objects and arrays). */
export function resolveValue(value: unknown, scope: ResolveScope): unknown {
  if (typeof value === 'string') return resolveString(value, scope);
  if (Array.isArray(value)) return value.map((item) => resolveValue(item, scope));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, resolveValue(item, scope)]));
  }
  return value;
}

/**
 * For code that runs in the sandbox (Condition expressions, run-code): each
 * template becomes a variable `__tN` bound to its value, so values are data
 * and never spliced into source.
 */
export function bindTemplates(source: string, scope: ResolveScope): { source: string; bindings: Record<string, unknown> } {
  const bindings: Record<string, unknown> = {};
  const byRaw = new Map<string, string>();
  const bind = (raw: string, body: string) => {
    let name = byRaw.get(raw);
    if (!name) {
      name = `__t${byRaw.size}`;
      byRaw.set(raw, name);
      bindings[name] = resolveTemplate(raw, body, scope);
    }
    return name;
  };
  // A template inside a string literal means interpolation: "total: {{@a:B.c}}" becomes ("total: " + String(__t0) + "").
  // Literals without a template stay as written: wrapped in parentheses they would break quoted object keys ({"a": 1}).
  const withStrings = source.replace(STRING_LITERAL, (literal) =>
    literal.search(TEMPLATE_PATTERN) === -1 ? literal : splitLiteral(literal, (raw, body) => `String(${bind(raw, body)})`, ' + '),
  );
  // Inside a template literal it becomes a substitution: `total: ${__t0}`.
  const withTemplates = withStrings.replace(TEMPLATE_LITERAL, (literal) => literal.replace(TEMPLATE_PATTERN, (raw, body: string) => `\${${bind(raw, body)}}`));
  return { source: withTemplates.replace(TEMPLATE_PATTERN, (raw, body: string) => bind(raw, body)), bindings };
}

/**
 * A quoted literal (`"..."`, `'...'`) containing templates, rewritten as a
 * concatenation of its quoted text pieces and the bound templates. Pieces
 * equal to `dropPiece` are left out.
 */
function splitLiteral(literal: string, bound: (raw: string, body: string) => string, joiner: string, dropPiece?: string): string {
  const quote = literal[0]!;
  const inner = literal.slice(1, -1);
  const parts: string[] = [];
  let at = 0;
  for (const match of inner.matchAll(TEMPLATE_PATTERN)) {
    parts.push(`${quote}${inner.slice(at, match.index)}${quote}`, bound(match[0], match[1]!));
    at = match.index! + match[0].length;
  }
  parts.push(`${quote}${inner.slice(at)}${quote}`);
  const kept = parts.filter((part) => part !== dropPiece);
  return `(${kept.join(joiner) || `${quote}${quote}`})`;
}

/** Single- and double-quoted JavaScript string literals (one line, with escapes). */
const STRING_LITERAL = /"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'/g;
const TEMPLATE_LITERAL = /`(?:[^`\\]|\\.)*`/g;

/** Single-quoted SQL string literals ('' is an escaped quote). */
const SQL_STRING = /'(?:[^']|'')*'/g;

/**
 * For SQL: each template becomes a bound parameter, never spliced text.
 * `placeholder(n)` spells the n-th (1-based) parameter: `?` for SQLite,
 * `$n` for PostgreSQL. A template inside a quoted string becomes a
 * concatenation with the parameter ('a' || ? || 'b').
 */
export function bindSqlTemplates(sql: string, scope: ResolveScope, placeholder: (n: number) => string): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const counted = scope.countText ?? uncounted;
  const bind = (raw: string, body: string) => {
    const value = resolveTemplate(raw, body, scope);
    params.push(value !== null && typeof value === 'object' ? counted(JSON.stringify(value)) : typeof value === 'boolean' ? (value ? 1 : 0) : value);
    return placeholder(params.length);
  };
  // Resolve left to right so parameter numbers follow their position in the text.
  let out = '';
  let last = 0;
  const literals = [...sql.matchAll(SQL_STRING)];
  const templateOutside = (segment: string) => segment.replace(TEMPLATE_PATTERN, (raw, body: string) => bind(raw, body));
  for (const literal of literals) {
    out += templateOutside(sql.slice(last, literal.index));
    const text = literal[0];
    // Empty text pieces are dropped so '{{@x}}' alone stays one parameter of its own type.
    out += text.includes('{{@') ? splitLiteral(text, bind, ' || ', "''") : text;
    last = literal.index! + text.length;
  }
  out += templateOutside(sql.slice(last));
  return { sql: out, params };
}
