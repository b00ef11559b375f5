/** Limits for one sandboxed evaluation, and the bounds callers cannot exceed. */

export interface SandboxLimits {
  /** Wall-clock budget for the code, in ms (default 1000, at most 60000). */
  timeoutMs?: number;
  /** Heap for the code, in bytes (default 32 MB, between 1 MB and 256 MB). */
  memoryBytes?: number;
}

export const DEFAULT_TIMEOUT_MS = 1000;
export const MAX_TIMEOUT_MS = 60_000;
export const MB = 1024 * 1024;
export const DEFAULT_MEMORY_BYTES = 32 * MB;
export const MIN_MEMORY_BYTES = 1 * MB;
export const MAX_MEMORY_BYTES = 256 * MB;

/** JSON text of a result, in characters. */
export const MAX_RESULT_CHARS = 1 * MB;
/** Captured console output: lines kept, and characters kept per line. */
export const MAX_LOG_LINES = 100;
export const MAX_LOG_LINE_CHARS = 2000;
/** An error message from the code is cut to this many characters. */
export const MAX_ERROR_CHARS = 2000;

/**
 * QuickJS's own stack limit. It must trip before the 5 MB emscripten stack
 * runs out and before the worker's native stack does (see pool.ts): 512 KB
 * allows roughly 3,000 nested JS calls.
 */
export const MAX_STACK_BYTES = 512 * 1024;

export interface ResolvedLimits {
  timeoutMs: number;
  memoryBytes: number;
}

const clamp = (value: number, min: number, max: number) => Math.min(max, Math.max(min, value));

export function resolveLimits(limits: SandboxLimits = {}): ResolvedLimits {
  const timeout = Number(limits.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const memory = Number(limits.memoryBytes ?? DEFAULT_MEMORY_BYTES);
  return {
    timeoutMs: Number.isFinite(timeout) ? Math.round(clamp(timeout, 1, MAX_TIMEOUT_MS)) : DEFAULT_TIMEOUT_MS,
    memoryBytes: Number.isFinite(memory) ? Math.round(clamp(memory, MIN_MEMORY_BYTES, MAX_MEMORY_BYTES)) : DEFAULT_MEMORY_BYTES,
  };
}

/** "32 MB", "1.5 MB", "512 KB": for messages. */
export function formatBytes(bytes: number): string {
  if (bytes >= MB) return `${Number((bytes / MB).toFixed(1))} MB`;
  return `${Math.round(bytes / 1024)} KB`;
}
