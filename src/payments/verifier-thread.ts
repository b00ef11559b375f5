import { Worker } from 'node:worker_threads';
import type { PaymentPayload, PaymentRequirements, VerifyResponse } from '@x402/core/types';
import { typeScriptWorkerUrl } from '../typescript-worker.ts';
import type { VerificationOptions, VerifyPayment } from './x402-verification.ts';

/**
 * The in-process facilitator's verifications run on a thread of their own.
 * Each recovers the payer's key from its signature (secp256k1 in JavaScript,
 * 2-3 ms of CPU on this machine): on the gateway's thread that stalls every
 * other request for as long, paid or not, and MPP's validation, which recovers
 * the same key, cannot run beside it. One thread per process (as the code
 * sandbox's pool), started on the first verification and shared by every
 * facilitator in the process; idle, it does not hold the process open.
 *
 * Verification only reads the chain, so it can always be done again: until
 * the thread is up, after it fails to start (for a minute), and for every
 * verification it had not answered when it died or hung, the facilitator's
 * own verification on the gateway's thread answers instead. Nothing is
 * skipped either way; the thread runs the same x402 verification.
 */

export interface VerifierRequest {
  id: number;
  options: VerificationOptions;
  payload: PaymentPayload;
  requirements: PaymentRequirements;
}

export type VerifierReply = { ready: true } | { id: number; response: VerifyResponse } | { id: number; error: string };

/** The thread has this long to load x402 and viem; it compiles their TypeScript callers through tsx the first time. */
const BOOT_TIMEOUT_MS = 60_000;
/** A verification (a few RPC reads of at most 15 s each) unanswered this long means a hung thread: it is replaced. */
const ANSWER_TIMEOUT_MS = 45_000;
/** After the thread fails to start, verifications stay on the gateway's thread this long before it is tried again. */
const RETRY_START_MS = 60_000;

interface Pending {
  resolve(response: VerifyResponse): void;
  reject(error: Error): void;
  /** The same verification on the gateway's thread, if the thread cannot answer. */
  again(): Promise<VerifyResponse>;
}

interface Thread {
  worker: Worker;
  ready: boolean;
  pending: Map<number, Pending>;
  timer?: NodeJS.Timeout;
}

let thread: Thread | undefined;
let startAgainAt = 0;
let nextId = 1;
/** Why the last thread stopped. */
let lastFailure: string | undefined;
/** Verifications answered by the thread, and by the gateway's thread instead (process-wide; for tests and diagnostics). */
const counts = { thread: 0, gatewayThread: 0 };

export function verifierThreadState() {
  return { running: thread !== undefined, ready: thread?.ready ?? false, verified: { ...counts }, lastFailure };
}

function start(): Thread {
  const worker = new Worker(typeScriptWorkerUrl(new URL('./verifier-worker.ts', import.meta.url)), { execArgv: [] });
  worker.unref();
  const started: Thread = { worker, ready: false, pending: new Map() };
  started.timer = setTimeout(() => retire(started, `it did not start within ${BOOT_TIMEOUT_MS} ms`), BOOT_TIMEOUT_MS).unref();
  worker.on('message', (reply: VerifierReply) => {
    if (thread !== started) return;
    if ('ready' in reply) {
      clearTimeout(started.timer);
      started.ready = true;
      return;
    }
    const pending = started.pending.get(reply.id);
    if (!pending) return;
    started.pending.delete(reply.id);
    awaitAnswers(started);
    counts.thread++;
    if ('error' in reply) pending.reject(new Error(reply.error));
    else pending.resolve(reply.response);
  });
  worker.on('error', (error) => retire(started, error.message));
  worker.on('exit', (code) => retire(started, `it exited (code ${code})`));
  return started;
}

/** While verifications are out, the thread holds the process open and must answer one within ANSWER_TIMEOUT_MS of the last. */
function awaitAnswers(up: Thread): void {
  clearTimeout(up.timer);
  if (up.pending.size === 0) {
    up.worker.unref();
    return;
  }
  up.worker.ref();
  up.timer = setTimeout(() => retire(up, `it answered nothing for ${ANSWER_TIMEOUT_MS} ms`), ANSWER_TIMEOUT_MS).unref();
}

/** Drops the thread; what it had not answered is verified again on the gateway's thread. */
function retire(dead: Thread, why: string): void {
  if (thread !== dead) return;
  thread = undefined;
  clearTimeout(dead.timer);
  if (!dead.ready) startAgainAt = Date.now() + RETRY_START_MS;
  for (const pending of dead.pending.values()) pending.again().then(pending.resolve, pending.reject);
  dead.pending.clear();
  void dead.worker.terminate().catch(() => undefined);
  lastFailure = why;
}

/** The thread, if it is up; starts it when there is none (and starting has not just failed). */
function readyThread(): Thread | undefined {
  if (!thread && Date.now() >= startAgainAt) {
    try {
      thread = start();
    } catch {
      startAgainAt = Date.now() + RETRY_START_MS;
    }
  }
  return thread?.ready ? thread : undefined;
}

/** Verifies on the verifier thread when it is up, else with `inProcess` (the same verification, on the gateway's thread). */
export function verifierThread(options: VerificationOptions, inProcess: VerifyPayment): VerifyPayment {
  const onGatewayThread = (payload: PaymentPayload, requirements: PaymentRequirements) => {
    counts.gatewayThread++;
    return inProcess(payload, requirements);
  };
  return (payload, requirements) => {
    const up = readyThread();
    if (!up) return onGatewayThread(payload, requirements);
    return new Promise<VerifyResponse>((resolve, reject) => {
      const id = nextId++;
      up.pending.set(id, { resolve, reject, again: () => onGatewayThread(payload, requirements) });
      if (up.pending.size === 1) awaitAnswers(up);
      up.worker.postMessage({ id, options, payload, requirements } satisfies VerifierRequest);
    });
  };
}

/** Stops the thread (tests; a process that exits needs nothing: an idle thread does not hold it). */
export async function stopVerifierThread(): Promise<void> {
  const running = thread;
  if (running) retire(running, 'stopped');
  startAgainAt = 0;
}
