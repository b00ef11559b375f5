import type { Services } from '../../services.ts';

/**
 * The contract between the executor and the code that runs one action node.
 * A runner is a function of (resolved config, context) → output: templates
 * are already resolved, and it never touches the execution tables itself.
 */

export interface NodeRunContext {
  executionId: string;
  workflowId: string;
  organizationId: string;
  node: { id: string; label: string; actionType: string };
  /** Set inside a For Each body: which iteration this run of the node is. */
  iterationIndex?: number;
  /** Aborted when the run is cancelled, reaped or times out: stop promptly. */
  signal: AbortSignal;
  services: Services;
  /**
   * Web3 steps call this with the signed transaction's hash *before*
   * broadcasting it, so a crash after broadcast never leads to a second send;
   * the terminal verification pass re-fetches every recorded hash.
   */
  recordTransaction(entry: { hash: string; chainId?: number; network?: string }): Promise<void>;
}

/** Every step output has `success`; a failure also has `error` (mirrored to the log's top-level error). */
export interface NodeResult {
  success: boolean;
  data?: unknown;
  error?: string;
  [key: string]: unknown;
}

export type NodeRunner = (config: Record<string, unknown>, ctx: NodeRunContext) => Promise<NodeResult>;

/** A failure a runner reports (rather than a crash): its message becomes the node's and the run's error. */
export class NodeError extends Error {
  constructor(
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'NodeError';
  }
}
