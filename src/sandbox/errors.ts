/**
 * Why sandboxed code failed. `timeout`, `memory`: it hit a limit; `syntax`: it
 * does not parse; `runtime`: it threw; `result`: it returned something that is
 * not JSON (a function, a BigInt, a cycle) or is too large.
 */
export type SandboxErrorKind = 'timeout' | 'memory' | 'syntax' | 'runtime' | 'result';

/** A failure of sandboxed code, with a message written for the agent that wrote the code. */
export class SandboxError extends Error {
  constructor(
    readonly kind: SandboxErrorKind,
    message: string,
    readonly logs: readonly string[] = [],
  ) {
    super(message);
    this.name = 'SandboxError';
  }
}

export const isSandboxError = (value: unknown): value is SandboxError => value instanceof SandboxError;
