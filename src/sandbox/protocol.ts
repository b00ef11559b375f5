import type { SandboxErrorKind } from './errors.ts';

/** Messages between the gateway thread (pool.ts) and a sandbox worker (worker.ts). */

export interface SandboxJob {
  id: number;
  /** `expression`: `source` is one JS expression; `body`: a function body that `return`s. */
  mode: 'expression' | 'body';
  source: string;
  /** Parameter names the source sees as variables. */
  names: string[];
  /** JSON array of the parameters' values, in the order of `names`. */
  argsJson: string;
  timeoutMs: number;
  memoryBytes: number;
  /** How messages name the code: "Code", "Expression". */
  subject: string;
}

export type SandboxOutcome =
  | { id: number; ok: true; /** JSON text; absent when the code produced `undefined`. */ resultJson?: string; logs: string[] }
  | {
      id: number;
      ok: false;
      kind: SandboxErrorKind;
      message: string;
      logs: string[];
      /** The worker's QuickJS module may be damaged: replace the worker. */ recycle?: boolean;
    };

export type WorkerMessage = { type: 'ready' } | { type: 'outcome'; outcome: SandboxOutcome };
