import { z } from 'zod';
import type { Services } from '../services.ts';
import { ServiceError } from '../errors.ts';
import { startWorkflowRun } from '../engine/run-workflow.ts';
import { abandonGatedRun, prepareGatedRun, releaseGatedRun } from '../engine/gated-runs.ts';
import { executionNotFound, isTerminal } from '../engine/executions.ts';
import { toWorkflowRecord, type WorkflowRecord } from '../engine/workflows.ts';
import type { PaymentCredentials, PaymentReceipt } from '../payments/paid-call.ts';
import { buildCalldata, type Calldata } from './calldata.ts';
import { validateCallInput } from './input.ts';
import { getListing, type Listing } from './listings.ts';
import type { Store } from '../store/db.ts';
import type { WorkflowExecutionsTable, WorkflowsTable } from '../store/schema.ts';
import { first, prepared } from '../store/prepared.ts';
import { canonicalJson } from '../text/request-hash.ts';

/**
 * Calling a listed workflow: validate the body against the listing's schema,
 * then answer calldata (write), run it (free read) or charge and run it (paid
 * read), waiting a bounded time for the result.
 */

/** How long a call waits for its run before answering `running` (MCP clients give up after about a minute). */
export const CALL_WAIT_MS = 15_000;

/** What a call of a read listing answers. */
export const runAnswerSchema = z.object({
  executionId: z.string(),
  status: z.string().describe('"running" when the run outlasts the wait; a terminal status otherwise'),
  output: z.object({ result: z.unknown() }).optional(),
  error: z.string().nullable().optional(),
  hint: z.string().optional(),
  resultUrl: z.string().optional().describe("While running: GET it (optionally ?timeoutMs=) for this call's answer; no credential needed"),
  paymentReplay: z.literal(true).optional().describe('The payment was presented before; this is its original execution; nothing ran or was charged again'),
});
export type RunAnswer = z.output<typeof runAnswerSchema>;

export type CallOutcome = { kind: 'calldata'; body: Calldata } | { kind: 'run'; body: RunAnswer; receipt?: PaymentReceipt };

export const callUrl = (baseUrl: string, slug: string) => `${baseUrl}/api/mcp/workflows/${slug}/call`;
export const callResultUrl = (baseUrl: string, slug: string, executionId: string) => `${baseUrl}/api/mcp/workflows/${slug}/calls/${executionId}`;

// A run started by a call of the listing: of its workflow, started as Manual by no user (free and paid calls run as
// nobody; the publisher's own runs carry their user, scheduled and chain-triggered ones their trigger).
const selectCallRun = prepared<{ id: string; workflowId: string }, { id: string }>((db: Store, a) =>
  db
    .selectFrom('workflow_executions')
    .select('id')
    .where('id', '=', a.id)
    .where('workflow_id', '=', a.workflowId)
    .where('user_id', 'is', null)
    .where('trigger_type', '=', 'Manual'),
);

/**
 * The answer of an earlier call that was still running, for whoever holds its executionId (random, as unguessable
 * as a key): the same `output.result` the call would have answered, nothing of the run's logs. Any other run of the
 * workflow (the publisher's own) is not found here.
 */
export async function callAnswer(services: Services, slug: string, executionId: string, waitMs: number): Promise<RunAnswer> {
  const listing = await getListing(services.store, slug);
  if (listing.type === 'write' || !(await first(selectCallRun, services.store, { id: executionId, workflowId: listing.workflowId }))) {
    throw executionNotFound(executionId);
  }
  return answerFor(services, listing, executionId, waitMs);
}

// Both read on every call: compiled once.
const selectWorkflow = prepared<{ id: string }, WorkflowsTable>((db: Store, a) => db.selectFrom('workflows').selectAll().where('id', '=', a.id));
const selectOutcome = prepared<{ id: string }, Pick<WorkflowExecutionsTable, 'status' | 'output' | 'error'>>((db: Store, a) =>
  db.selectFrom('workflow_executions').select(['status', 'output', 'error']).where('id', '=', a.id),
);

async function loadWorkflow(services: Services, listing: Listing): Promise<WorkflowRecord> {
  const row = await first(selectWorkflow, services.store, { id: listing.workflowId });
  if (!row || !row.enabled) throw new ServiceError(410, 'workflow_disabled', `The workflow behind ${listing.slug} is disabled; nothing was run or charged.`);
  return toWorkflowRecord(row);
}

function walk(value: unknown, path: string): unknown {
  if (path === '') return value;
  let current = value;
  for (const key of path.split('.')) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/** The documented result: `path` inside the data of the listing's result node. */
function resultOf(listing: Listing, output: Record<string, unknown> | null): unknown {
  if (!output) return null;
  const data = output.result;
  if (!listing.result) return data ?? null;
  if (output.nodeId !== undefined && output.nodeId !== listing.result.nodeId) return null;
  return walk(data, listing.result.path) ?? null;
}

/** A paid call whose settlement was sent but not mined in time: the run starts once the chain says it paid (pending-payments.ts). */
function awaitingPayment(services: Services, listing: Listing, executionId: string, transaction: string | undefined): RunAnswer {
  const resultUrl = callResultUrl(services.config.baseUrl, listing.slug, executionId);
  const sent = transaction ? `its transaction ${transaction} is not mined yet` : 'its outcome is not known yet (the facilitator may have sent it)';
  return {
    executionId,
    status: 'awaiting_payment',
    resultUrl,
    hint:
      `The payment is settling: ${sent}. The run starts once the chain shows the payment, or ends as an error (nothing charged) ` +
      `once the authorization can no longer be used. GET ${resultUrl} (?timeoutMs= up to 60000) for the answer; do not pay again.`,
  };
}

export async function answerFor(services: Services, listing: Listing, executionId: string, waitMs: number): Promise<RunAnswer> {
  const read = async () => {
    const row = await first(selectOutcome, services.store, { id: executionId });
    if (!row) throw executionNotFound(executionId);
    return { status: row.status, output: row.output ? (JSON.parse(row.output) as Record<string, unknown>) : null, error: row.error };
  };
  // Subscribed before the read, so a run that ends in between still wakes the wait. A run that ends in this process
  // answers from its completion event (what it wrote, without reading it back); one ended elsewhere, or a timeout,
  // reads the row again.
  const next = waitMs > 0 ? services.engine.events.subscribe(executionId, waitMs) : undefined;
  let outcome: { status: string; output: Record<string, unknown> | null; error: string | null };
  try {
    outcome = await read();
  } catch (error) {
    next?.close();
    throw error;
  }
  if (!next || isTerminal(outcome.status)) next?.close();
  else {
    const ended = await next.ended;
    outcome = ended?.outcome && isTerminal(ended.outcome.status) ? ended.outcome : await read();
  }
  if (outcome.status === 'awaiting_payment') return awaitingPayment(services, listing, executionId, undefined);
  if (!isTerminal(outcome.status)) {
    // The caller is rarely of the publisher's organization, so the organization's wait route is closed to it.
    const resultUrl = callResultUrl(services.config.baseUrl, listing.slug, executionId);
    return { executionId, status: 'running', resultUrl, hint: `Still running: GET ${resultUrl} (?timeoutMs= up to 60000) for the answer.` };
  }
  const { status, output, error } = outcome;
  return { executionId, status, output: { result: resultOf(listing, output) }, ...(status === 'success' ? {} : { error }) };
}

export async function callListing(
  services: Services,
  slug: string,
  body: Record<string, unknown>,
  options: {
    credentials: PaymentCredentials;
    waitMs?: number;
    /** Called before a free read listing runs (a paid one is paid for, a write one runs nothing): the caller's own limit. */
    beforeFreeRun?: () => Promise<void>;
  },
): Promise<CallOutcome> {
  const listing = await getListing(services.store, slug);
  const inputs = validateCallInput(slug, listing.inputSchema, body);
  const workflow = await loadWorkflow(services, listing);
  if (listing.type === 'write') return { kind: 'calldata', body: buildCalldata(workflow.nodes, inputs) };

  const waitMs = options.waitMs ?? CALL_WAIT_MS;
  if (listing.price === null) {
    await options.beforeFreeRun?.();
    const run = await startWorkflowRun(services, workflow, { userId: null, input: inputs, triggerType: 'Manual' });
    return { kind: 'run', body: await answerFor(services, listing, run.executionId, waitMs) };
  }

  const wallet = await services.organizations.wallet(listing.organizationId);
  if (!wallet) throw new ServiceError(503, 'payments_unavailable', `The organization listing ${slug} has no wallet to be paid into; nothing was charged.`);
  const charged = await services.payments.charge(
    {
      slug,
      title: listing.title,
      description: listing.description,
      price: listing.price,
      payTo: wallet.walletAddress as `0x${string}`,
      url: callUrl(services.config.baseUrl, slug),
      inputSchema: listing.inputSchema,
      outputFields: listing.outputFields,
    },
    options.credentials,
    {
      prepare: (via) => prepareGatedRun(services, workflow, inputs, 'Manual', via),
      release: (executionId, alongside) => releaseGatedRun(services, executionId, workflow.organizationId ?? listing.organizationId, alongside),
      abandon: (executionId, reason) => abandonGatedRun(services, executionId, reason),
      isSameCall: async (executionId) => {
        const row = await services.store.selectFrom('workflow_executions').select('input').where('id', '=', executionId).executeTakeFirst();
        return row?.input !== null && row?.input !== undefined && canonicalJson(JSON.parse(row.input)) === canonicalJson(inputs);
      },
    },
  );
  if (charged.pending) return { kind: 'run', body: awaitingPayment(services, listing, charged.executionId, charged.pending.transaction) };
  const answer = await answerFor(services, listing, charged.executionId, waitMs);
  return { kind: 'run', body: charged.replayed ? { ...answer, paymentReplay: true } : answer, receipt: charged.receipt };
}
