import { runUserCode, SandboxError } from '../../sandbox/quickjs.ts';
import { NodeError, type NodeRunner } from './types.ts';
import { isRecord } from '../../is-record.ts';

/**
 * `code/run-code`: runs a JavaScript function body in the sandbox. The code
 * reads `input` (the executor's template bindings merged with `config.input`)
 * and each binding by name (`__t0`, ...), and must `return` a JSON value.
 * `timeout` is in ms, clamped to 1..10000 (default 1000); the heap limit is
 * the sandbox's 32 MB.
 */

export const DEFAULT_CODE_TIMEOUT_MS = 1000;
export const MAX_CODE_TIMEOUT_MS = 10_000;

function parseTimeout(value: unknown): number {
  if (value === undefined || value === null || value === '') return DEFAULT_CODE_TIMEOUT_MS;
  const ms = typeof value === 'number' ? value : typeof value === 'string' ? Number(value.trim()) : Number.NaN;
  if (!Number.isFinite(ms)) {
    throw new NodeError(`timeout must be a number of milliseconds (1 to ${MAX_CODE_TIMEOUT_MS}); received ${JSON.stringify(value)}.`, { field: 'timeout' });
  }
  return Math.round(Math.min(MAX_CODE_TIMEOUT_MS, Math.max(1, ms)));
}

/** `config.input`: an object, or its JSON text. */
function parseInput(value: unknown): Record<string, unknown> {
  if (value === undefined || value === null || value === '') return {};
  let parsed: unknown = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch {
      parsed = undefined;
    }
  }
  if (!isRecord(parsed)) throw new NodeError('input must be an object (or its JSON text); the code reads it as `input`.', { field: 'input' });
  return parsed;
}

export const runCodeRunner: NodeRunner = async (config, ctx) => {
  const code = config.code;
  if (typeof code !== 'string' || code.trim() === '') {
    throw new NodeError('code must be a non-empty JavaScript function body that ends with `return <value>`.', { field: 'code' });
  }
  const timeoutMs = parseTimeout(config.timeout);
  const bindings = isRecord(config.__bindings) ? config.__bindings : {};
  const input = { ...bindings, ...parseInput(config.input) };
  try {
    const { result, logs } = await runUserCode(code, input, { timeoutMs, bindings, organizationId: ctx.organizationId });
    return { success: true, data: { result, logs }, result, logs };
  } catch (error) {
    if (error instanceof SandboxError) throw new NodeError(error.message, { kind: error.kind, logs: error.logs });
    throw error;
  }
};
