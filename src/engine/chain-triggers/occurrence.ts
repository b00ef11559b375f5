/**
 * One thing a chain trigger fires for: a block, a log or a transfer. `key`
 * names it uniquely within its workflow (it becomes the execution's
 * trigger_occurrence); `input` becomes the trigger node's output fields.
 */
export interface Occurrence {
  key: string;
  blockNumber: number;
  input: Record<string, unknown>;
}

/** Block order, then position in the block: runs are created in chain order. */
export const inChainOrder = (a: Occurrence & { position?: number }, b: Occurrence & { position?: number }) =>
  a.blockNumber - b.blockNumber || (a.position ?? 0) - (b.position ?? 0);
