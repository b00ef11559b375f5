import { SandboxError } from './errors.ts';
import { resolveLimits, type SandboxLimits } from './limits.ts';
import { SandboxPool } from './pool.ts';
import type { SandboxJob } from './protocol.ts';

/**
 * Evaluates untrusted JavaScript in QuickJS compiled to WebAssembly, never in
 * the gateway's own isolate (no node:vm, no eval). Every evaluation gets a
 * fresh runtime and context with a time limit, a heap limit and a stack
 * limit, in a worker thread (pool.ts). Nothing of the host is reachable: no
 * require, process, timers, network or file system; `console` is captured.
 * Inputs cross as JSON text parsed inside the sandbox; results come back as
 * JSON text (at most 1 MB).
 */

export { SandboxError, isSandboxError, type SandboxErrorKind } from './errors.ts';
export type { SandboxLimits } from './limits.ts';

/** Limits, and the organization whose fair share of the sandbox workers the evaluation counts against (pool.ts). */
export interface EvaluationOptions extends SandboxLimits {
  organizationId?: string;
}

export interface UserCodeOptions extends EvaluationOptions {
  /** Extra variables visible to the code by name (e.g. the executor's `__t0`), besides `input`. */
  bindings?: Record<string, unknown>;
}

export interface UserCodeResult {
  result: unknown;
  logs: string[];
}

let pool: SandboxPool | undefined;
const sandbox = () => (pool ??= new SandboxPool());

/** Stops the sandbox workers (graceful shutdown, tests). The next evaluation starts them again. */
export async function closeSandbox(): Promise<void> {
  const current = pool;
  pool = undefined;
  await current?.close();
}

/**
 * Evaluates one JS expression; each binding is a variable of that name.
 * Returns the value as it round-trips through JSON (`undefined` stays
 * `undefined`). Throws SandboxError.
 */
export async function evaluateExpression(expression: string, bindings: Record<string, unknown>, limits?: EvaluationOptions): Promise<unknown> {
  const names = Object.keys(bindings);
  const { result } = await execute(
    'expression',
    expression,
    names,
    names.map((name) => bindings[name]),
    limits,
    'Expression',
  );
  return result;
}

/**
 * Runs a function body that can read `input` (and any `bindings` by name) and
 * must `return` a JSON-serializable value. Throws SandboxError, whose `logs`
 * hold what the code printed before failing.
 */
export async function runUserCode(code: string, input: unknown, options: UserCodeOptions = {}): Promise<UserCodeResult> {
  const bindings = options.bindings ?? {};
  const names = ['input', ...Object.keys(bindings).filter((name) => name !== 'input')];
  const values = names.map((name) => (name === 'input' ? input : bindings[name]));
  const outcome = await execute('body', code, names, values, options, 'Code');
  if (outcome.result === undefined) {
    throw new SandboxError('result', 'Code returned nothing: end it with `return <value>` (a JSON-serializable value).', outcome.logs);
  }
  return outcome;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const RESERVED = new Set(
  'await break case catch class const continue debugger default delete do else enum export extends false finally for function if implements import in instanceof interface let new null package private protected public return static super switch this throw true try typeof var void while with yield arguments eval'.split(
    ' ',
  ),
);

function checkNames(names: readonly string[]): void {
  for (const name of names) {
    if (!IDENTIFIER.test(name) || RESERVED.has(name)) {
      throw new SandboxError('syntax', `Binding name ${JSON.stringify(name)} is not a valid JavaScript variable name.`);
    }
  }
}

/** JSON for the host's values; BigInts become decimal strings rather than failing. */
function encodeArgs(values: readonly unknown[]): string {
  try {
    return JSON.stringify(values, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
  } catch (error) {
    throw new SandboxError('runtime', `The values given to the code cannot be passed as JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
}

async function execute(
  mode: SandboxJob['mode'],
  source: string,
  names: string[],
  values: readonly unknown[],
  options: EvaluationOptions | undefined,
  subject: string,
): Promise<UserCodeResult> {
  if (typeof source !== 'string') throw new SandboxError('syntax', `${subject} must be a string of JavaScript.`);
  checkNames(names);
  const argsJson = encodeArgs(values);
  const outcome = await sandbox().run({ mode, source, names, argsJson, subject, ...resolveLimits(options) }, options?.organizationId);
  if (!outcome.ok) throw new SandboxError(outcome.kind, outcome.message, outcome.logs);
  let result: unknown;
  if (outcome.resultJson !== undefined) {
    try {
      result = JSON.parse(outcome.resultJson);
    } catch {
      throw new SandboxError('result', `${subject} produced a result that is not valid JSON.`, outcome.logs);
    }
  }
  return { result, logs: outcome.logs };
}
