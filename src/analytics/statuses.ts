/**
 * How the two kinds of run count in analytics (SPEC "Execution status":
 * analytics uses the workflow vocabulary). A direct execution that
 * `completed` is a success and one that `failed` an error; `unconfirmed` is
 * in flight on both sides, never a failure. `cancelled` is neither a success
 * nor a failure.
 */

export const WORKFLOW_SUCCESS = ['success'] as const;
export const WORKFLOW_FAILED = ['error', 'system_error'] as const;
export const DIRECT_SUCCESS = ['completed'] as const;
export const DIRECT_FAILED = ['failed'] as const;

export const STATUS_FILTERS = ['pending', 'running', 'success', 'error'] as const;
export type StatusFilter = (typeof STATUS_FILTERS)[number];

/** The stored statuses each filter value matches, per source. */
export const STATUS_MATCHES: Record<StatusFilter, { workflow: readonly string[]; direct: readonly string[] }> = {
  pending: { workflow: ['pending', 'awaiting_payment'], direct: ['pending'] },
  running: { workflow: ['running', 'unconfirmed'], direct: ['unconfirmed'] },
  success: { workflow: WORKFLOW_SUCCESS, direct: DIRECT_SUCCESS },
  error: { workflow: WORKFLOW_FAILED, direct: DIRECT_FAILED },
};

/** A direct execution's status in the analytics vocabulary. */
export const directRunStatus = (status: string) => (status === 'completed' ? 'success' : status === 'failed' ? 'error' : status);
