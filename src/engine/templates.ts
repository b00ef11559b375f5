/**
 * Template references `{{@<nodeId>:<Label>.<field path>}}` inside node
 * configs: finding and parsing them. Resolving values is the executor's job;
 * this module only says what is referenced and where.
 */

export const SYSTEM_NODE_ID = '__system';
export const SYSTEM_LABEL = 'System';
export const SYSTEM_BUILTINS = ['unixTimestamp', 'unixTimestampMs', 'isoTimestamp'] as const;

/**
 * One `{{@...}}` occurrence; group 1 is the text between `@` and `}}` less trailing whitespace. Global: reset lastIndex or use matchAll.
 * Group 1 cannot end in whitespace, so it never competes with `\s*` for a run of spaces: linear time on any input
 * (`[^{}]*?\s*` was quadratic on an unclosed `{{@` followed by many spaces).
 */
export const TEMPLATE_PATTERN = /\{\{\s*@([^{}\s]*(?:\s+[^{}\s]+)*)\s*\}\}/g;

export interface TemplateRef {
  /** The whole occurrence, e.g. `{{@balance:Check Balance.balance}}`. */
  raw: string;
  nodeId: string;
  label: string;
  /** Field path with array indexes as their own segments: `items[0].amount` → `['items', '0', 'amount']`. Empty: the whole output. */
  path: string[];
  /** Where in the scanned value it was found: `functionArgs`, `rules[0].leftOperand`; '' for the value itself. */
  location: string;
}

export interface MalformedTemplate {
  raw: string;
  location: string;
  reason: string;
}

export interface TemplateScan {
  refs: TemplateRef[];
  malformed: MalformedTemplate[];
}

export interface ScanOptions {
  /**
   * The label of a node by id. Labels may contain dots (`Price v1.2`); with
   * this the label is matched whole instead of ending at the first dot.
   */
  labelOf?: (nodeId: string) => string | undefined;
  /** Nesting below this depth is not scanned (the validator refuses such configs separately). */
  maxDepth?: number;
}

const EXAMPLE = '{{@nodeId:Label.field}}';

/** `items[0].amount` → `['items', '0', 'amount']`; undefined when malformed (`a..b`, `a[x]`, `a[`). */
export function parseFieldPath(text: string): string[] | undefined {
  if (text.trim() === '') return [];
  const out: string[] = [];
  for (const part of text.split('.')) {
    const match = /^([^[\]]*)((?:\[\d+\])*)$/.exec(part);
    if (!match) return undefined;
    const name = match[1].trim();
    const indexes = match[2] ? match[2].slice(1, -1).split('][') : [];
    if (!name && indexes.length === 0) return undefined;
    if (name) out.push(name);
    out.push(...indexes);
  }
  return out;
}

/** The parts of a template body (`nodeId:Label.field`), or why it is not one. */
export function parseTemplateBody(
  body: string,
  labelOf?: (nodeId: string) => string | undefined,
): { nodeId: string; label: string; path: string[] } | { error: string } {
  const colon = body.indexOf(':');
  if (colon < 0) return { error: `missing ":<Label>" after the node id; the form is ${EXAMPLE}` };
  const nodeId = body.slice(0, colon).trim();
  if (!nodeId) return { error: `missing node id after "@"; the form is ${EXAMPLE}` };
  const rest = body.slice(colon + 1).trim();

  let label: string;
  let pathText: string;
  const known = labelOf?.(nodeId);
  if (known && (rest === known || rest.startsWith(`${known}.`))) {
    label = known;
    pathText = rest.slice(known.length + 1);
  } else {
    const dot = rest.indexOf('.');
    label = (dot < 0 ? rest : rest.slice(0, dot)).trim();
    pathText = dot < 0 ? '' : rest.slice(dot + 1);
  }
  if (!label) return { error: `missing label after ":"; the form is ${EXAMPLE}` };
  if (rest.endsWith('.')) return { error: `the field path ends with "."; the form is ${EXAMPLE}` };
  const path = parseFieldPath(pathText);
  if (!path) return { error: `malformed field path ${JSON.stringify(pathText)}: use dots between names and [n] for array indexes, e.g. data.items[0].amount` };
  return { nodeId, label, path };
}

function scanString(text: string, location: string, labelOf: ScanOptions['labelOf'], into: TemplateScan): void {
  if (!text.includes('{{') && !text.includes('}}')) return;
  for (const match of text.matchAll(TEMPLATE_PATTERN)) {
    const parsed = parseTemplateBody(match[1], labelOf);
    if ('error' in parsed) into.malformed.push({ raw: match[0], location, reason: parsed.error });
    else into.refs.push({ raw: match[0], ...parsed, location });
  }
  // What remains must hold no half template: `{{@a:B.c` or `{{@a:{{@b:C.d}}}}`.
  const rest = text.replace(TEMPLATE_PATTERN, '');
  const open = rest.indexOf('{{@');
  if (open >= 0) {
    into.malformed.push({
      raw: rest.slice(open, open + 80),
      location,
      reason: `unbalanced braces: a template opens with "{{@" but is not closed by "}}"; the form is ${EXAMPLE}`,
    });
  }
}

/** Every template in a value (strings, nested objects, arrays), with where each was found. */
export function scanTemplates(value: unknown, options: ScanOptions = {}): TemplateScan {
  const scan: TemplateScan = { refs: [], malformed: [] };
  const maxDepth = options.maxDepth ?? 64;
  const visit = (node: unknown, location: string, depth: number) => {
    if (typeof node === 'string') return scanString(node, location, options.labelOf, scan);
    if (!node || typeof node !== 'object' || depth > maxDepth) return;
    if (Array.isArray(node)) {
      node.forEach((item, i) => visit(item, `${location}[${i}]`, depth + 1));
      return;
    }
    for (const [key, inner] of Object.entries(node)) visit(inner, location ? `${location}.${key}` : key, depth + 1);
  };
  visit(value, '', 0);
  return scan;
}

export function findTemplateRefs(value: unknown, options?: ScanOptions): TemplateRef[] {
  return scanTemplates(value, options).refs;
}

/** `text` with every template replaced, e.g. by a placeholder to check the JSON around templates. */
export function replaceTemplates(text: string, replacement: string | ((raw: string) => string)): string {
  return text.replace(TEMPLATE_PATTERN, (raw) => (typeof replacement === 'string' ? replacement : replacement(raw)));
}

/** True when the whole string is one template: its value comes from upstream, so its shape cannot be checked on save. */
export const isWholeTemplate = (text: string): boolean => {
  const trimmed = text.trim();
  const matches = [...trimmed.matchAll(TEMPLATE_PATTERN)];
  return matches.length === 1 && matches[0][0] === trimmed;
};
