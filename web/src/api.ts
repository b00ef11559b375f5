/** The gateway's REST API as the dashboard calls it: same origin, session cookie, JSON errors kept whole. */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: { error?: string; code?: string; message?: string; challenge?: string; required?: string[] } & Record<string, unknown>,
  ) {
    super(typeof body.message === 'string' ? `${body.error ?? 'Error'}: ${body.message}` : (body.error ?? `HTTP ${status}`));
  }
  get code() {
    return this.body.code;
  }
}

export const SIGNED_OUT_EVENT = 'flowgate:signed-out';

export async function api<T>(path: string, init: { method?: string; body?: unknown; signal?: AbortSignal } = {}): Promise<T> {
  const response = await fetch(path, {
    method: init.method ?? 'GET',
    credentials: 'same-origin',
    headers: init.body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    signal: init.signal,
  });
  const text = await response.text();
  let body: unknown = undefined;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = { error: text.slice(0, 300) };
  }
  if (!response.ok) {
    const error = new ApiError(response.status, (body ?? {}) as ApiError['body']);
    // The session ended (expired, signed out elsewhere, revoked): the app goes back to the sign-in page.
    if (error.status === 401 && error.code === 'unauthorized') dispatchEvent(new Event(SIGNED_OUT_EVENT));
    throw error;
  }
  return body as T;
}

export const query = (params: Record<string, string | number | undefined | null>) => {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== null && value !== '') search.set(name, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
};

// Shapes of SPEC.md "Analytics" and the routes the pages use.
export interface Summary {
  totalRuns: number;
  successfulRuns: number;
  failedRuns: number;
  successRate: number;
  totalGasUsedWei: string;
  avgExecutionTimeMs: number | null;
}
export interface Bucket {
  timestamp: string;
  runCount: number;
  successCount: number;
  failedCount: number;
}
export interface NetworkRow {
  network: string;
  runCount: number;
  gasUsedWei: string;
}
export type RunRow =
  | {
      id: string;
      source: 'workflow';
      workflowId: string;
      workflowName: string | null;
      status: string;
      createdAt: string;
      completedAt: string | null;
      durationMs: number | null;
    }
  | {
      id: string;
      source: 'direct';
      type: string;
      network: string;
      status: string;
      transactionHash: string | null;
      gasUsedWei: string | null;
      createdAt: string;
      completedAt: string | null;
    };
export interface Step {
  nodeId: string;
  nodeName: string | null;
  status: string;
  input: unknown;
  output: unknown;
  durationMs: number | null;
  timestamp: string | null;
  error?: string | null;
}
export interface Workflow {
  id: string;
  name: string;
  description: string | null;
  nodes: Array<{ id: string; type?: string; data?: { label?: string; type?: string; config?: Record<string, unknown> }; position?: { x: number; y: number } }>;
  edges: Array<{ id?: string; source: string; target: string }>;
  enabled: boolean;
  updatedAt: string;
  /** False for another organization's public workflow, which the API also answers by id. */
  isOwner?: boolean;
}
export interface Execution {
  id: string;
  status: string;
  triggerType: string | null;
  createdAt: string;
  completedAt: string | null;
  duration: string | null;
  error: string | null;
}
export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  scope: string | null;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}
export interface Member {
  userId: string;
  role: string;
  email: string | null;
  walletAddress: string | null;
  joinedAt: string;
}
export interface SpendCap {
  dailyCapWei: string | null;
  dailyUsedWei: string;
  dailySolanaCapLamports: string | null;
  dailySolanaUsedLamports: string;
  effectiveDailyCapWei: string;
  effectiveDailySolanaCapLamports: string;
  usingDefaultDailyCap: boolean;
  usingDefaultDailySolanaCap: boolean;
  chainCaps: Array<{ chainId: number; dailyCapWei: string; effectiveDailyCapWei: string; dailyUsedWei: string }>;
}
export interface Chain {
  chainId: number;
  name: string;
  explorerUrl: string | null;
}
export interface SessionInfo {
  user: { id: string; email: string | null; walletAddress: string | null };
  organization: { id: string; slug: string; name: string; role: string };
}
