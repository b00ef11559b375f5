import {
  CONDITION_OPERATORS,
  getAction,
  getTrigger,
  suggest,
  suggestActionType,
  suggestConfigField,
  suggestTriggerType,
  triggerTypes,
  type FieldMap,
} from '../actions/index.ts';
import { canonicalTimezone, parseCron, suggestTimezone, timezoneMessage } from './cron.ts';
import { GRAPH_LIMITS, receivedValue, type InvalidField } from './graph.ts';
import { isWholeTemplate, replaceTemplates } from './templates.ts';
import { nestsDeeperThan } from '../json-depth.ts';
import { webhookSchemaProblem } from './webhook-schema.ts';
import { isRecord } from '../is-record.ts';

/**
 * Checks of one node's data.config against its registry entry: required
 * fields, value types from the registry's hints, ABI-backed contract fields,
 * Schedule cron and time zone, Condition rules. validate.ts runs these for
 * every node and adds the checks that need the whole graph.
 */

export type Entry = Omit<InvalidField, 'nodeId' | 'nodeLabel'>;

/** Where a node's problems go; the node's id and label are filled in by the receiver. */
export interface NodeSink {
  error(entry: Entry): void;
  warn(entry: Entry): void;
  /** True once errors are only counted: skip costly did-you-mean work. */
  full(): boolean;
  /** `nodes[i].data.config` */
  configPath: string;
}

/** An empty string counts as missing: editors save untouched fields as ''. */
const isMissing = (value: unknown) => value === undefined || value === null || (typeof value === 'string' && value.trim() === '');

const quote = (value: unknown) => JSON.stringify(value);

const fieldPath = (base: string, key: string) => (/^[A-Za-z_$][\w$]*$/.test(key) ? `${base}.${key}` : `${base}[${quote(key)}]`);

/** Placeholder for templates when checking the JSON around them; valid both bare and inside quotes. */
const TEMPLATE_PLACEHOLDER = '0';

/** A ready-to-send stringified value, offered only while it is short enough to be useful. */
function stringifiedSuggestion(value: unknown): string | undefined {
  try {
    const text = JSON.stringify(value);
    return text.length <= 1000 ? text : undefined;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------
// Hostile-input guards

/** False (after reporting) when a config is too deep or too large to inspect further. */
export function checkConfigSize(config: Record<string, unknown>, at: NodeSink): boolean {
  if (nestsDeeperThan(config, GRAPH_LIMITS.maxConfigDepth)) {
    at.error({
      code: 'config_too_deep',
      path: at.configPath,
      message: `data.config nests objects or arrays more than ${GRAPH_LIMITS.maxConfigDepth} levels deep. Flatten it; large structured values belong in a JSON string field.`,
    });
    return false;
  }
  const bytes = Buffer.byteLength(JSON.stringify(config));
  if (bytes > GRAPH_LIMITS.maxConfigBytes) {
    at.error({
      code: 'config_too_large',
      path: at.configPath,
      received: `${bytes} bytes`,
      message: `data.config is ${bytes} bytes serialized; the limit is ${GRAPH_LIMITS.maxConfigBytes}. Move large data out of the workflow (fetch it with HTTP Request at run time).`,
    });
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Field values, by the registry's type hints

/** What a hint says about a field: its base type and, for `string (JSON ...)` hints, the JSON it holds. */
function hintKind(hint: string): { base: string; json?: 'array' | 'object' | 'any'; options?: string[]; prefixes?: string[] } {
  const base = hint.split(/[\s(|]/, 1)[0];
  const detail = /^\w+ \(([^;)]*)/.exec(hint)?.[1] ?? '';
  if (base === 'string' && /^JSON\b/.test(detail)) {
    return { base, json: /^JSON array/.test(detail) ? 'array' : /^JSON (object|Schema)/.test(detail) ? 'object' : 'any' };
  }
  const parts = detail.split(' | ').map((p) => p.trim());
  // `GET | POST | ...`, `default | eoa | safe:<safeWalletId>`: a closed set of values.
  if (base === 'string' && parts.length > 1 && parts.every((p) => /^[\w-]+(:<[^>]+>)?$/.test(p))) {
    return {
      base,
      options: parts.filter((p) => !p.includes(':')),
      prefixes: parts.filter((p) => p.includes(':')).map((p) => p.slice(0, p.indexOf(':') + 1)),
    };
  }
  return { base };
}

/** Parses JSON text that may contain templates; the templates stand in as a placeholder value. */
function parseTemplatedJson(text: string): { ok: true; value: unknown } | { ok: false; reason: string } {
  try {
    return { ok: true, value: JSON.parse(replaceTemplates(text, TEMPLATE_PLACEHOLDER)) };
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error) };
  }
}

const describeJson = (value: unknown) =>
  Array.isArray(value) ? 'an array' : value === null ? 'null' : typeof value === 'object' ? 'an object' : `a ${typeof value}`;

function checkFieldValue(field: string, hint: string, value: unknown, at: NodeSink): void {
  const path = fieldPath(at.configPath, field);
  const kind = hintKind(hint);
  const wrongType = (message: string, suggestion?: string) =>
    at.error({ code: 'invalid_field_type', path, received: receivedValue(value), message, suggestion });

  switch (kind.base) {
    case 'string': {
      if (typeof value !== 'string') {
        if (kind.json && typeof value === 'object' && value !== null) {
          return wrongType(
            `${field} must be a JSON-encoded string, not ${describeJson(value)}: send JSON.stringify(${field}). Expected ${hint}.`,
            stringifiedSuggestion(value),
          );
        }
        return wrongType(
          `${field} must be a string (${hint}); got ${describeJson(value)}.${typeof value === 'number' ? ' Send the number as decimal text, e.g. "0.001".' : ''}`,
        );
      }
      if (isWholeTemplate(value)) return;
      if (kind.json) {
        const parsed = parseTemplatedJson(value);
        if (!parsed.ok) {
          return at.error({
            code: 'invalid_json',
            path,
            received: receivedValue(value),
            message: `${field} must be JSON text (${hint}) but does not parse: ${parsed.reason}.`,
          });
        }
        const ok = kind.json === 'any' || (kind.json === 'array' ? Array.isArray(parsed.value) : isRecord(parsed.value));
        if (!ok) {
          at.error({
            code: 'invalid_json',
            path,
            received: receivedValue(value),
            message: `${field} must be a JSON ${kind.json} (${hint}); it parses to ${describeJson(parsed.value)}.`,
          });
        }
        return;
      }
      if (kind.options && !value.includes('{{')) {
        const allowed = kind.options.includes(value) || kind.prefixes!.some((p) => value.startsWith(p) && value.length > p.length);
        if (!allowed) {
          const all = [...kind.options, ...kind.prefixes!.map((p) => `${p}<id>`)];
          at.error({
            code: 'invalid_option',
            path,
            received: receivedValue(value),
            message: `${field} must be one of ${all.join(', ')}; got ${quote(value)}.`,
            suggestion: suggest(value, kind.options),
          });
        }
      }
      return;
    }
    case 'number': {
      const ok =
        (typeof value === 'number' && Number.isFinite(value)) || (typeof value === 'string' && (value.includes('{{') || /^-?\d+(\.\d+)?$/.test(value.trim())));
      if (!ok) wrongType(`${field} must be a number (${hint}); got ${describeJson(value)} ${receivedText(value)}.`);
      return;
    }
    case 'boolean': {
      const ok = typeof value === 'boolean' || value === 'true' || value === 'false' || (typeof value === 'string' && isWholeTemplate(value));
      if (!ok) wrongType(`${field} must be true or false; got ${describeJson(value)} ${receivedText(value)}.`);
      return;
    }
    case 'object': {
      if (!isRecord(value)) wrongType(`${field} must be an object (${hint}); got ${describeJson(value)}.`);
      return;
    }
  }
}

const receivedText = (value: unknown) => {
  const shown = receivedValue(value);
  return typeof shown === 'string' ? quote(shown) : String(JSON.stringify(shown));
};

// ---------------------------------------------------------------------------
// Contract fields: abi, abiFunction (and its legacy names), functionArgs, event names

const ABI_FIELDS = ['abi', 'contractABI'] as const;
const LEGACY_FUNCTION_FIELDS = ['functionName', 'function', 'method'] as const;

interface AbiItem {
  type?: unknown;
  name?: unknown;
  inputs?: unknown;
}

/** The parsed ABI when it can be checked; undefined when absent, templated or invalid (the latter reported). */
function checkAbi(field: string, value: unknown, at: NodeSink): AbiItem[] | undefined {
  const path = fieldPath(at.configPath, field);
  if (Array.isArray(value) || isRecord(value)) {
    at.error({
      code: 'abi_not_string',
      path,
      received: receivedValue(value),
      message: Array.isArray(value)
        ? `${field} must be a JSON-encoded string of the ABI array, not a raw array: send JSON.stringify(abi).`
        : `${field} must be a JSON-encoded string of the ABI array, not an object: wrap the fragment in an array and send JSON.stringify([fragment]).`,
      suggestion: stringifiedSuggestion(Array.isArray(value) ? value : [value]),
    });
    return undefined;
  }
  if (typeof value !== 'string') {
    at.error({
      code: 'invalid_field_type',
      path,
      received: receivedValue(value),
      message: `${field} must be a JSON-encoded string of the ABI array; got ${describeJson(value)}.`,
    });
    return undefined;
  }
  if (isWholeTemplate(value)) return undefined;
  const parsed = parseTemplatedJson(value);
  if (!parsed.ok) {
    at.error({
      code: 'invalid_abi',
      path,
      received: receivedValue(value),
      message: `${field} is not valid JSON (${parsed.reason}). Send JSON.stringify(abi) of the ABI array.`,
    });
    return undefined;
  }
  if (!Array.isArray(parsed.value)) {
    const artifact = isRecord(parsed.value) && Array.isArray(parsed.value.abi);
    at.error({
      code: 'invalid_abi',
      path,
      received: receivedValue(value),
      message: artifact
        ? `${field} holds a build artifact object; send only its "abi" array, JSON-encoded.`
        : `${field} must be a JSON array of ABI items; it parses to ${describeJson(parsed.value)}.`,
      suggestion: artifact ? stringifiedSuggestion((parsed.value as { abi: unknown }).abi) : undefined,
    });
    return undefined;
  }
  const bad = parsed.value.findIndex((item) => !isRecord(item) || typeof item.type !== 'string');
  if (bad >= 0) {
    at.error({
      code: 'invalid_abi',
      path,
      received: receivedValue(parsed.value[bad]),
      message: `${field}[${bad}] is not an ABI item: each item is an object with a "type" ("function", "event", ...).`,
    });
    return undefined;
  }
  return parsed.value as AbiItem[];
}

/** `transfer(address,uint256)` names `transfer`. */
export const bareName = (signature: string) => signature.trim().replace(/\(.*$/s, '').trim();

function checkAbiMember(kind: 'function' | 'event', field: string, name: unknown, abi: AbiItem[], at: NodeSink): AbiItem[] {
  if (typeof name !== 'string' || isMissing(name) || name.includes('{{')) return [];
  const members = abi.filter((item) => item.type === kind && typeof item.name === 'string');
  const wanted = bareName(name);
  const matches = members.filter((item) => item.name === wanted);
  if (matches.length === 0) {
    const names = [...new Set(members.map((m) => m.name as string))];
    at.error({
      code: kind === 'function' ? 'unknown_abi_function' : 'unknown_abi_event',
      path: fieldPath(at.configPath, field),
      received: receivedValue(name),
      message: names.length
        ? `The abi has no ${kind} named ${quote(wanted)}; it has ${names.slice(0, 20).join(', ')}${names.length > 20 ? ', ...' : ''}.`
        : `The abi has no ${kind} at all; include the ${kind} ${quote(wanted)} in the abi.`,
      suggestion: suggest(wanted, names),
    });
  }
  return matches;
}

/** abiFunction and its legacy names (SPEC: `functionName` passes on save, fails at execution). Returns the legacy keys consumed. */
function checkFunctionName(config: Record<string, unknown>, at: NodeSink): string[] {
  const legacy = LEGACY_FUNCTION_FIELDS.filter((key) => !isMissing(config[key]));
  const current = config.abiFunction;
  for (const key of legacy) {
    const path = fieldPath(at.configPath, key);
    if (!isMissing(current) && config[key] !== current) {
      at.error({
        code: 'conflicting_fields',
        path,
        received: receivedValue(config[key]),
        message: `${key} is ${quote(config[key])} but abiFunction is ${quote(current)}. abiFunction names the function; remove ${key} (or make it equal).`,
        suggestion: 'abiFunction',
      });
    } else {
      at.warn({
        code: 'legacy_field',
        path,
        received: receivedValue(config[key]),
        message: isMissing(current)
          ? `${key} is a legacy name: rename it to abiFunction. It is saved for legacy workflows, but execution fails with "abiFunction is missing" until you do.`
          : `${key} is a legacy name and repeats abiFunction; remove it.`,
        suggestion: 'abiFunction',
      });
    }
  }
  return legacy;
}

function checkFunctionArgs(value: unknown, fns: AbiItem[], at: NodeSink): void {
  const path = fieldPath(at.configPath, 'functionArgs');
  if (Array.isArray(value)) {
    at.error({
      code: 'function_args_not_string',
      path,
      received: receivedValue(value),
      message:
        'functionArgs must be a JSON-encoded array string, not a raw array: send JSON.stringify(args). Templates inside the string are resolved before parsing.',
      suggestion: stringifiedSuggestion(value),
    });
    return;
  }
  if (typeof value !== 'string') {
    at.error({
      code: 'invalid_field_type',
      path,
      received: receivedValue(value),
      message: `functionArgs must be a JSON-encoded array string, e.g. "[\\"0x...\\", \\"1000\\"]"; got ${describeJson(value)}.`,
    });
    return;
  }
  if (isWholeTemplate(value)) return;
  const parsed = parseTemplatedJson(value);
  if (!parsed.ok || !Array.isArray(parsed.value)) {
    at.error({
      code: 'invalid_function_args',
      path,
      received: receivedValue(value),
      message: parsed.ok
        ? `functionArgs must be a JSON array in ABI order; it parses to ${describeJson(parsed.value)}. Wrap the arguments in [...].`
        : `functionArgs is not a valid JSON array (${parsed.reason}). Quote string arguments and addresses, e.g. "[\\"0x...\\", \\"1000\\"]"; templates may stand inside quotes.`,
    });
    return;
  }
  const counts = [...new Set(fns.map((fn) => (Array.isArray(fn.inputs) ? fn.inputs.length : 0)))];
  if (counts.length > 0 && !counts.includes(parsed.value.length)) {
    at.error({
      code: 'function_args_count',
      path,
      received: receivedValue(value),
      message: `functionArgs has ${parsed.value.length} argument(s) but ${quote(fns[0].name)} takes ${counts.join(' or ')}.`,
    });
  }
}

/** conditionConfig rules: known operators and AND/OR groups, at any nesting. */
function checkConditionConfig(value: unknown, at: NodeSink): void {
  const operators: readonly string[] = CONDITION_OPERATORS;
  const visit = (node: unknown, path: string) => {
    if (Array.isArray(node)) return node.forEach((item, i) => visit(item, `${path}[${i}]`));
    if (!isRecord(node)) return;
    if ('logic' in node && node.logic !== 'AND' && node.logic !== 'OR') {
      at.error({
        code: 'invalid_option',
        path: `${path}.logic`,
        received: receivedValue(node.logic),
        message: 'logic must be "AND" or "OR".',
        suggestion: typeof node.logic === 'string' ? suggest(node.logic, ['AND', 'OR']) : undefined,
      });
    }
    if ('operator' in node && !(typeof node.operator === 'string' && operators.includes(node.operator))) {
      at.error({
        code: 'unknown_operator',
        path: `${path}.operator`,
        received: receivedValue(node.operator),
        message: `Unknown operator ${quote(node.operator)}; use one of ${operators.join(' ')}.`,
        suggestion: typeof node.operator === 'string' ? suggest(node.operator, operators) : undefined,
      });
    }
    for (const [key, inner] of Object.entries(node)) if (typeof inner === 'object') visit(inner, `${path}.${key}`);
  };
  visit(value, fieldPath(at.configPath, 'conditionConfig'));
}

// ---------------------------------------------------------------------------
// One registry entry's fields

interface FieldSpec {
  /** `actionType` or `triggerType` value, for messages and field suggestions. */
  key: string;
  kind: 'action' | 'trigger';
  requiredFields: FieldMap;
  optionalFields: FieldMap;
}

function nearestField(spec: FieldSpec, field: string): string | undefined {
  if (spec.kind === 'action') return suggestConfigField(spec.key, field);
  return suggest(field, [...Object.keys(spec.requiredFields), ...Object.keys(spec.optionalFields)]);
}

function checkFields(spec: FieldSpec, config: Record<string, unknown>, at: NodeSink): void {
  const hints: FieldMap = { ...spec.requiredFields, ...spec.optionalFields };
  const discriminator = spec.kind === 'action' ? 'actionType' : 'triggerType';
  const handled = new Set<string>([discriminator]);
  if ('abiFunction' in hints) for (const key of checkFunctionName(config, at)) handled.add(key);

  const unknownKeys = Object.keys(config).filter((k) => !(k in hints) && !handled.has(k));
  for (const [field, hint] of Object.entries(spec.requiredFields)) {
    if (!isMissing(config[field])) continue;
    if (field === 'abiFunction' && LEGACY_FUNCTION_FIELDS.some((k) => handled.has(k))) continue;
    const misspelled = unknownKeys.find((k) => nearestField(spec, k) === field);
    if (misspelled) handled.add(misspelled);
    at.error({
      code: 'missing_required_field',
      path: fieldPath(at.configPath, field),
      received: config[field] === undefined ? undefined : receivedValue(config[field]),
      message: misspelled
        ? `${spec.key} requires ${field}; found ${misspelled} instead: rename ${misspelled} to ${field}. Expected ${hint}.`
        : `${spec.key} requires ${field}${config[field] === undefined ? '' : ' (it is empty)'}: ${hint}.`,
      suggestion: misspelled ? field : undefined,
    });
  }

  for (const [field, hint] of Object.entries(hints)) {
    const value = config[field];
    if (isMissing(value)) continue;
    if ((ABI_FIELDS as readonly string[]).includes(field) || field === 'functionArgs') continue; // checked below, with the ABI
    if (field === 'conditionConfig' && isRecord(value)) checkConditionConfig(value, at);
    checkFieldValue(field, hint, value, at);
  }

  // Contract fields judged together: the function and its arguments against the ABI.
  const abiField = ABI_FIELDS.find((f) => f in hints && !isMissing(config[f]));
  const abi = abiField ? checkAbi(abiField, config[abiField], at) : undefined;
  let fns: AbiItem[] = [];
  if (abi) {
    if ('abiFunction' in hints) fns = checkAbiMember('function', 'abiFunction', config.abiFunction ?? config.functionName, abi, at);
    if ('eventName' in hints) checkAbiMember('event', 'eventName', config.eventName, abi, at);
  }
  if ('functionArgs' in hints && !isMissing(config.functionArgs)) checkFunctionArgs(config.functionArgs, fns, at);

  for (const key of unknownKeys) {
    if (handled.has(key)) continue;
    const near = nearestField(spec, key);
    at.warn({
      code: 'unknown_config_field',
      path: fieldPath(at.configPath, key),
      received: receivedValue(config[key]),
      message: `${spec.key} has no field ${key}; it is kept but ignored${near ? `. Did you mean ${near}?` : '.'} Fields: ${Object.keys(hints).join(', ') || '(none)'}.`,
      suggestion: near,
    });
  }
}

// ---------------------------------------------------------------------------
// Nodes

export function checkTrigger(config: Record<string, unknown>, at: NodeSink): void {
  const path = `${at.configPath}.triggerType`;
  const triggerType = config.triggerType;
  const known = triggerTypes().join(', ');
  if (isMissing(triggerType)) {
    const looksLikeAction = typeof config.actionType === 'string' && config.actionType.trim() !== '';
    at.error({
      code: 'missing_trigger_type',
      path,
      message: looksLikeAction
        ? `This node has type "trigger" but configures actionType ${quote(config.actionType)}: set the node type to "action", or set triggerType to one of ${known}.`
        : `A trigger node needs data.config.triggerType, one of ${known}.`,
    });
    return;
  }
  if (typeof triggerType !== 'string') {
    at.error({ code: 'invalid_field_type', path, received: receivedValue(triggerType), message: `triggerType must be a string, one of ${known}.` });
    return;
  }
  const trigger = getTrigger(triggerType);
  if (!trigger) {
    const near = suggestTriggerType(triggerType);
    at.error({
      code: 'unknown_trigger_type',
      path,
      received: receivedValue(triggerType),
      message: `Unknown triggerType ${quote(triggerType)}${near ? `; did you mean ${quote(near)}?` : '.'} Trigger types are matched exactly (Pascal case): ${known}.`,
      suggestion: near,
    });
    return;
  }
  checkFields({ key: trigger.triggerType, kind: 'trigger', requiredFields: trigger.requiredFields, optionalFields: trigger.optionalFields }, config, at);

  if (trigger.triggerType === 'Schedule') checkSchedule(config, at);
  if (trigger.triggerType === 'Webhook') checkWebhookSchema(config, at);
}

/** webhookSchema compiled as each webhook call compiles it (webhook-schema.ts: RE2 patterns, bounded), so a schema every call would refuse is refused at save. */
function checkWebhookSchema(config: Record<string, unknown>, at: NodeSink): void {
  const text = config.webhookSchema;
  if (typeof text !== 'string' || isMissing(text) || text.includes('{{')) return; // type and JSON are checked by the field's hint
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return; // reported as invalid_json
  }
  if (!isRecord(parsed)) return; // reported by the field's hint
  const problem = webhookSchemaProblem(text);
  if (problem) {
    at.error({
      code: 'invalid_webhook_schema',
      path: `${at.configPath}.webhookSchema`,
      received: receivedValue(text),
      message: `webhookSchema is not a usable JSON Schema: ${problem}.`,
    });
  }
}

function checkSchedule(config: Record<string, unknown>, at: NodeSink): void {
  const { scheduleCron, scheduleTimezone } = config;
  let zone: string | undefined;
  if (typeof scheduleTimezone === 'string' && !isMissing(scheduleTimezone)) {
    zone = canonicalTimezone(scheduleTimezone);
    if (!zone) {
      at.error({
        code: 'invalid_timezone',
        path: `${at.configPath}.scheduleTimezone`,
        received: receivedValue(scheduleTimezone),
        message: timezoneMessage(scheduleTimezone),
        suggestion: suggestTimezone(scheduleTimezone),
      });
    }
  }
  if (typeof scheduleCron !== 'string' || isMissing(scheduleCron)) return; // reported as missing or mistyped already
  const parsed = parseCron(scheduleCron, zone);
  if (!parsed.ok) {
    at.error({
      code: 'invalid_cron',
      path: `${at.configPath}.scheduleCron`,
      received: receivedValue(scheduleCron),
      message: `${parsed.message} Check an expression with validate_cron before saving.`,
    });
  }
}

export function checkAction(config: Record<string, unknown>, at: NodeSink): void {
  const path = `${at.configPath}.actionType`;
  const actionType = config.actionType;
  if (isMissing(actionType)) {
    at.warn({
      code: 'unconfigured_action',
      path,
      message:
        typeof config.triggerType === 'string'
          ? `This action node has triggerType ${quote(config.triggerType)} but no actionType. A workflow has exactly one trigger node (type "trigger"); give this node an actionType or remove it. Execution refuses unconfigured actions.`
          : 'This action node has no actionType yet. It may be saved, but execution refuses it: set data.config.actionType to a key from list_action_schemas.',
    });
    return;
  }
  if (typeof actionType !== 'string') {
    at.error({
      code: 'invalid_field_type',
      path,
      received: receivedValue(actionType),
      message: 'actionType must be a string key of the action registry (see list_action_schemas).',
    });
    return;
  }
  const action = getAction(actionType);
  if (!action) {
    const near = suggestActionType(actionType);
    const trigger = getTrigger(actionType);
    at.error({
      code: 'unknown_action_type',
      path,
      received: receivedValue(actionType),
      message: trigger
        ? `${quote(actionType)} is a trigger type, not an action. Make this node type "trigger" with data.config.triggerType ${quote(actionType)} (a workflow has exactly one trigger).`
        : `Unknown actionType ${quote(actionType)}${near ? `; did you mean ${quote(near)}?` : '.'} actionType must match a registry key exactly (list_action_schemas lists them).`,
      suggestion: near,
    });
    return;
  }
  if (action.runnable === false) {
    // Refused at save time: otherwise the workflow saves cleanly and every run of it fails.
    at.error({
      code: 'action_not_available',
      path,
      received: actionType,
      message: `${actionType} cannot run on this gateway yet (no runner; its featureEnabled is false in list_action_schemas). Remove this step or use an action that runs here, e.g. webhook/send-webhook or HTTP Request for notifications.`,
    });
  } else if (!action.featureEnabled) {
    at.warn({
      code: 'feature_disabled',
      path,
      received: actionType,
      message: `${actionType} is switched off on this deployment; execution refuses it until it is enabled again.`,
    });
  }
  checkFields({ key: action.actionType, kind: 'action', requiredFields: action.requiredFields, optionalFields: action.optionalFields }, config, at);
}
