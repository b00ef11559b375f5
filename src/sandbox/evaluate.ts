import { newQuickJSWASMModule, newVariant, RELEASE_SYNC, type QuickJSContext, type QuickJSHandle, type QuickJSWASMModule } from 'quickjs-emscripten';
import type { SandboxErrorKind } from './errors.ts';
import { formatBytes, MAX_ERROR_CHARS, MAX_LOG_LINE_CHARS, MAX_LOG_LINES, MAX_RESULT_CHARS, MAX_STACK_BYTES } from './limits.ts';
import { PRELUDE_SOURCE } from './prelude.ts';
import type { SandboxJob, SandboxOutcome } from './protocol.ts';

/**
 * Runs one job in a fresh QuickJS runtime and context (inside a sandbox
 * worker thread; see pool.ts). Synchronous: the interrupt handler enforces the
 * deadline, and the module's fixed-size linear memory enforces the heap limit.
 */

const WASM_PAGE_BYTES = 64 * 1024;
/** The release build's initial memory (16 MB): its 5 MB stack, static data and a first heap. */
const BASE_PAGES = 256;

/**
 * One QuickJS module per memory limit. QuickJS's own `setMemoryLimit` only
 * bounds single allocations in the emscripten build (it cannot see block
 * sizes, quickjs-emscripten #255/#271), so the real bound is the module's
 * WebAssembly memory: created with a maximum, it cannot grow past it, malloc
 * fails and QuickJS throws "out of memory". Only one job runs at a time in a
 * worker, so the module's heap is that job's heap.
 */
const modules = new Map<number, Promise<QuickJSWASMModule>>();
const MAX_MODULES = 4;
const memories = new WeakMap<QuickJSWASMModule, { memory: WebAssembly.Memory; maxBytes: number }>();

export function loadModule(memoryBytes: number): Promise<QuickJSWASMModule> {
  const pages = BASE_PAGES + Math.ceil(memoryBytes / WASM_PAGE_BYTES);
  let module = modules.get(pages);
  if (!module) {
    if (modules.size >= MAX_MODULES) modules.delete(modules.keys().next().value!);
    const wasmMemory = new WebAssembly.Memory({ initial: BASE_PAGES, maximum: pages });
    module = newQuickJSWASMModule(newVariant(RELEASE_SYNC, { wasmMemory }));
    module.then(
      (loaded) => memories.set(loaded, { memory: wasmMemory, maxBytes: pages * WASM_PAGE_BYTES }),
      () => modules.delete(pages),
    );
    modules.set(pages, module);
  }
  return module;
}

/** Whether the module's memory has grown to its cap (it never shrinks back). */
function heapAtCap(module: QuickJSWASMModule): boolean {
  const entry = memories.get(module);
  return entry !== undefined && entry.memory.buffer.byteLength >= entry.maxBytes;
}

/** Forget every module (after a host-level failure left one in an unknown state). */
export function dropModules(): void {
  modules.clear();
}

class LogBuffer {
  readonly lines: string[] = [];
  private dropped = 0;

  get full(): boolean {
    return this.lines.length >= MAX_LOG_LINES;
  }

  /** Counts a line that arrived after the buffer filled (without copying it out of the sandbox). */
  drop(): void {
    this.dropped++;
  }

  push(level: string, text: string): void {
    if (this.full) return this.drop();
    const prefix = level === 'log' ? '' : `[${level}] `;
    const line = prefix + text;
    this.lines.push(line.length > MAX_LOG_LINE_CHARS ? `${line.slice(0, MAX_LOG_LINE_CHARS)}… (${line.length - MAX_LOG_LINE_CHARS} more characters)` : line);
  }

  result(): string[] {
    return this.dropped > 0 ? [...this.lines, `… ${this.dropped} more log line(s) dropped (limit ${MAX_LOG_LINES})`] : this.lines;
  }
}

interface Failure {
  phase: 'syntax' | 'runtime' | 'result' | 'escaped';
  name: string;
  message: string;
  stack: string;
}

const cut = (text: string) => (text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS)}…` : text);

/**
 * The user's line for an error: the innermost stack frame in code compiled by
 * the Function constructor (file "<input>"), which adds two lines before the
 * body (the expression wrapper one more).
 */
function userLine(stack: string, mode: SandboxJob['mode']): number | undefined {
  const match = /\(<input>:(\d+)/.exec(stack);
  if (!match) return undefined;
  const line = Number(match[1]) - (mode === 'expression' ? 3 : 2);
  return line >= 1 ? line : undefined;
}

/** Turns what went wrong into an outcome kind and an agent-readable message. */
function explain(failure: Failure, job: SandboxJob, heapFull: boolean): { kind: SandboxErrorKind; message: string } {
  const { subject } = job;
  if (failure.name === 'InternalError' && failure.message === 'interrupted') {
    return { kind: 'timeout', message: `${subject} exceeded its ${job.timeoutMs} ms time limit` };
  }
  // When even the error object cannot be allocated, QuickJS throws null.
  if (failure.message === 'out of memory' || (failure.name === 'null' && heapFull)) {
    return { kind: 'memory', message: `${subject} exceeded its memory limit of ${formatBytes(job.memoryBytes)}` };
  }
  if (failure.message === 'stack overflow' || failure.message === 'Maximum call stack size exceeded') {
    return { kind: 'memory', message: `${subject} exceeded its stack limit: recursion is too deep (about 3,000 nested calls at most)` };
  }
  const line = userLine(failure.stack, job.mode);
  const at = line !== undefined && job.mode === 'body' ? ` (line ${line})` : '';
  switch (failure.phase) {
    case 'syntax':
      return { kind: 'syntax', message: `${subject} does not parse: ${failure.name}: ${cut(failure.message)}` };
    case 'result':
      return { kind: 'result', message: `${subject} returned a value that is not JSON-serializable: ${cut(failure.message)}` };
    case 'runtime':
      if (failure.name === 'null') return { kind: 'runtime', message: `${subject} threw null${at}` };
      return { kind: 'runtime', message: `${subject} threw ${failure.name}: ${cut(failure.message)}${at}` };
    default:
      return { kind: 'runtime', message: `${subject} was stopped by the sandbox: ${failure.name}: ${cut(failure.message)}` };
  }
}

/**
 * Reads an exception that escaped the prelude's own handling: the engine's
 * uncatchable "interrupted", or "out of memory" / "stack overflow" raised while
 * the prelude itself was reporting. Only data properties are read.
 */
function readEscaped(ctx: QuickJSContext, error: QuickJSHandle): Failure {
  const text = (key: string) => {
    try {
      const handle = ctx.getProp(error, key);
      try {
        return ctx.typeof(handle) === 'string' ? ctx.getString(handle) : '';
      } finally {
        handle.dispose();
      }
    } catch {
      return '';
    }
  };
  if (ctx.typeof(error) !== 'object') return { phase: 'escaped', name: 'Error', message: `a ${ctx.typeof(error)} was thrown`, stack: '' };
  if (ctx.dump(error) === null) return { phase: 'escaped', name: 'null', message: 'null was thrown', stack: '' };
  return { phase: 'escaped', name: text('name') || 'Error', message: text('message'), stack: text('stack') };
}

export function runJob(module: QuickJSWASMModule, job: SandboxJob): SandboxOutcome {
  const logs = new LogBuffer();
  let outcome: SandboxOutcome;
  let damaged = false;
  const runtime = module.newRuntime();
  const handles: QuickJSHandle[] = [];
  let ctx: QuickJSContext | undefined;
  try {
    ctx = runtime.newContext();
    outcome = evaluateIn(module, ctx, job, logs, (handle) => (handles.push(handle), handle));
  } catch (error) {
    // The host side of the module failed (e.g. the native stack ran out in
    // deeply nested parsing): report it, and have the pool replace the worker.
    damaged = true;
    const stack = error instanceof RangeError;
    const message = stack
      ? `${job.subject} exceeded its stack limit: nesting is too deep`
      : `${job.subject} could not be run by the sandbox: ${error instanceof Error ? error.message : String(error)}`;
    outcome = { id: job.id, ok: false, kind: stack ? 'memory' : 'runtime', message, logs: logs.result() };
  } finally {
    try {
      for (const handle of handles.reverse()) if (handle.alive) handle.dispose();
      ctx?.dispose();
      runtime.dispose();
    } catch {
      damaged = true;
    }
  }
  if (damaged) {
    dropModules();
    return { ...outcome, recycle: true } as SandboxOutcome;
  }
  return outcome;
}

/** Sets up the context (limits, console, prelude), runs the job, reads the result. */
function evaluateIn(
  module: QuickJSWASMModule,
  ctx: QuickJSContext,
  job: SandboxJob,
  logs: LogBuffer,
  keep: (handle: QuickJSHandle) => QuickJSHandle,
): SandboxOutcome {
  const failed = (kind: SandboxErrorKind, message: string): SandboxOutcome => ({ id: job.id, ok: false, kind, message, logs: logs.result() });
  let failure: Failure | undefined;
  let deadline = Number.POSITIVE_INFINITY;
  ctx.runtime.setMemoryLimit(job.memoryBytes);
  ctx.runtime.setMaxStackSize(MAX_STACK_BYTES);
  ctx.runtime.setInterruptHandler(() => Date.now() > deadline);

  const hostLog = keep(
    ctx.newFunction('log', (level, text) => {
      if (logs.full) logs.drop();
      else logs.push(ctx.getString(level), ctx.getString(text));
    }),
  );
  const hostFail = keep(
    ctx.newFunction('fail', (phase, name, message, stack) => {
      failure ??= {
        phase: ctx.getString(phase) as Failure['phase'],
        name: ctx.getString(name),
        message: ctx.getString(message),
        stack: ctx.getString(stack),
      };
    }),
  );
  // `strip` drops debug info from the prelude only: a third faster to compile, on every evaluation.
  const prelude = keep(ctx.unwrapResult(ctx.evalCode(PRELUDE_SOURCE, 'flowgate-prelude.js', { strip: true })));
  const run = keep(ctx.unwrapResult(ctx.callFunction(prelude, ctx.undefined, hostLog, hostFail)));
  const args = [job.mode, job.source, JSON.stringify(job.names), job.argsJson].map((text) => keep(ctx.newString(text)));

  deadline = Date.now() + job.timeoutMs;
  const returned = ctx.callFunction(run, ctx.undefined, ...args);
  // From here on, any JS the host triggers (a getter while reading) is interrupted at once.
  deadline = 0;

  if (returned.error) failure = readEscaped(ctx, keep(returned.error));
  const value = returned.error ? undefined : keep(returned.value);
  if (failure) {
    const { kind, message } = explain(failure, job, heapAtCap(module));
    return failed(kind, message);
  }
  if (!value || ctx.typeof(value) !== 'string') return { id: job.id, ok: true, logs: logs.result() };
  const length = ctx.getNumber(keep(ctx.getProp(value, 'length')));
  if (length > MAX_RESULT_CHARS) {
    return failed('result', `${job.subject} returned a result too large to keep: ${length} characters of JSON, over the limit of ${MAX_RESULT_CHARS}`);
  }
  return { id: job.id, ok: true, resultJson: ctx.getString(value), logs: logs.result() };
}
