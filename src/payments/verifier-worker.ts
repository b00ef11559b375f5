import { parentPort } from 'node:worker_threads';
import { createX402Verification, type VerifyPayment } from './x402-verification.ts';
import type { VerifierReply, VerifierRequest } from './verifier-thread.ts';

/**
 * Entry point of the verifier thread (verifier-thread.ts): runs x402's
 * verification of each payment it is sent and answers with the result. One
 * verification per facilitator (rpcUrl, chain, network, address), built on
 * first use; the few a process has (one per gateway, more only in tests) are
 * capped all the same.
 */

const port = parentPort;
if (!port) throw new Error('src/payments/verifier-worker.ts runs as a worker thread; see verifier-thread.ts.');

const MAX_VERIFICATIONS = 32;
const verifications = new Map<string, VerifyPayment>();

function verificationFor(options: VerifierRequest['options']): VerifyPayment {
  const key = JSON.stringify([options.rpcUrl, options.chainId, options.network, options.address]);
  let verify = verifications.get(key);
  if (!verify) {
    verify = createX402Verification(options).verify;
    verifications.set(key, verify);
    if (verifications.size > MAX_VERIFICATIONS) verifications.delete(verifications.keys().next().value!);
  }
  return verify;
}

port.on('message', async ({ id, options, payload, requirements }: VerifierRequest) => {
  let reply: VerifierReply;
  try {
    reply = { id, response: await verificationFor(options)(payload, requirements) };
  } catch (error) {
    reply = { id, error: error instanceof Error ? error.message : String(error) };
  }
  port.postMessage(reply);
});

port.postMessage({ ready: true } satisfies VerifierReply);
