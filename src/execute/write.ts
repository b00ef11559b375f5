import { isRpcUnreachable, rpcUnavailable, RpcUnavailableError } from '../chains/rpc-errors.ts';
import { ServiceError } from '../errors.ts';
import { concludeKey, replayBody, reserveIdempotencyKey } from '../guards/idempotency.ts';
import { newId } from '../ids.ts';
import { guardedSend, longestSendMs, type WriteOutcome } from '../onchain/guarded-send.ts';
import type { PreparedWrite } from '../onchain/prepared-write.ts';
import { receiptError } from '../onchain/receipts.ts';
import type { Services } from '../services.ts';
import { insufficientScopeToBroadcast, type DirectCaller, type DirectResponse } from './caller.ts';
import { finish, insertPending, loadRecord, statusFromReceipts, storeSigned, toRecord } from './records.ts';
import { recoverInterrupted } from './recovery.ts';
import { simulate } from './simulate.ts';
import { isStoreUnreachable } from '../store/db.ts';

/**
 * Direct execution (SPEC "Direct execution"): transfers and contract calls
 * signed by the organization wallet, through the one guarded write path.
 * Order per DESIGN: (auth, scope, rate limit at the registry edge) →
 * validation → wallet → simulate short-circuit → idempotency → spend cap
 * with the execution row → stablecoin limit → sign/store/broadcast → verify.
 */

function outcomeStatus(outcome: WriteOutcome) {
  if (outcome.kind === 'refused') return { status: 'failed' as const, error: outcome.error, receipts: [] };
  const receipts = [outcome.receipt];
  return { status: statusFromReceipts(receipts), error: receiptError(receipts) ?? null, receipts };
}

/**
 * Broadcast a prepared write with idempotency. `endpoint` scopes the key;
 * `canonicalRequest` is what the body hash covers.
 */
export async function executeWrite(
  services: Services,
  caller: DirectCaller,
  endpoint: string,
  canonicalRequest: unknown,
  write: PreparedWrite,
  simulateOnly: boolean,
): Promise<DirectResponse> {
  if (simulateOnly) return simulate(services, caller, write);
  if (!caller.canBroadcast) throw insufficientScopeToBroadcast();

  const scope = caller.idempotencyKey ? { organizationId: caller.organizationId, endpoint, key: caller.idempotencyKey } : undefined;
  let reservation = scope ? await reserveIdempotencyKey(services.store, scope, canonicalRequest, longestSendMs(services.config.receiptTimeoutMs)) : undefined;
  if (reservation?.kind === 'replay') return { status: reservation.response.status, body: replayBody(reservation.response.body) };
  if (reservation?.kind === 'stale') {
    const recovered = await recoverInterrupted(services, caller, reservation);
    if (recovered) return recovered;
    reservation = await reserveIdempotencyKey(services.store, scope!, canonicalRequest);
    if (reservation.kind === 'replay') return { status: reservation.response.status, body: replayBody(reservation.response.body) };
  }

  const executionId = newId();
  let outcome: WriteOutcome;
  /** Set once the signed bytes are stored and the key attached: from then on the transaction may be on chain, whatever fails next. */
  let signed: string | undefined;
  try {
    outcome = await guardedSend(
      services,
      {
        organizationId: caller.organizationId,
        chainId: write.chain.chainId,
        request: write.request,
        abi: write.abi,
        gasLimitMultiplier: write.gasLimitMultiplier,
      },
      {
        source: 'direct',
        executionId,
        insertRecord: (trx, from) =>
          insertPending(trx, {
            id: executionId,
            organizationId: caller.organizationId,
            apiKeyId: caller.apiKeyId,
            type: write.type,
            chainId: write.chain.chainId,
            from,
            to: write.request.to,
            valueWei: write.request.value,
            result: write.result,
          }),
        // storeSigned overwrites the row's hash and bytes: a re-signed transaction replaces one never broadcast.
        replaceable: true,
        onSigned: async (hash, raw) => {
          await storeSigned(services.store, executionId, hash, raw);
          await reservation?.attach(executionId);
          // Only now may the bytes leave the process (a throw above stops the broadcast).
          signed = hash;
        },
      },
    );
  } catch (error) {
    if (signed) return await signedButUnsettled(services, caller, executionId, signed, reservation, error);
    await reservation?.release();
    // The row exists only if the spend reservation committed; a failure after that ends it failed.
    await services.store
      .updateTable('direct_executions')
      .set({ status: 'failed', error: (error as Error).message, completed_at: new Date().toISOString() })
      .where('id', '=', executionId)
      .where('status', '=', 'pending')
      .execute();
    // The database, not the chain, failed (the edge answers 503 unavailable): nothing was broadcast.
    if (error instanceof ServiceError || isStoreUnreachable(error)) throw error;
    if (error instanceof RpcUnavailableError || isRpcUnreachable(error)) throw rpcUnavailable(write.chain, 'nothing was signed');
    throw new ServiceError(
      502,
      'chain_unavailable',
      `The chain ${write.chain.name} (${write.chain.chainId}) could not be reached to send this transaction; nothing was signed. Retry later.`,
      { chainId: write.chain.chainId },
    );
  }

  const settled = outcomeStatus(outcome);
  await finish(services.store, executionId, settled);
  const record = toRecord(services.chains, await loadRecord(services.store, caller.organizationId, executionId));
  const response: DirectResponse = { status: 202, body: record };

  if (reservation) {
    const released = outcome.kind === 'refused' || outcome.receipt.receiptStatus === 'reverted';
    await concludeKey(reservation, released ? 'released' : settled.status === 'completed' ? 'completed' : 'held', executionId, response);
  }
  return response;
}

/**
 * Something failed after the transaction was signed and stored, so it may be on chain: never "nothing was signed",
 * never a released key (a retry would send again). The execution is left unconfirmed, which a status read settles
 * against the chain, and the key replays it. Should the store fail again, the key stays in progress and the stale-key
 * recovery, which reads the stored bytes, decides.
 */
async function signedButUnsettled(
  services: Services,
  caller: DirectCaller,
  executionId: string,
  hash: string,
  reservation: Awaited<ReturnType<typeof reserveIdempotencyKey>> | undefined,
  error: unknown,
): Promise<DirectResponse> {
  console.error(`[flowgate] direct execution ${executionId}: transaction ${hash} was signed, then: ${(error as Error).message}`);
  await finish(services.store, executionId, { status: 'unconfirmed', error: null });
  const response: DirectResponse = { status: 202, body: toRecord(services.chains, await loadRecord(services.store, caller.organizationId, executionId)) };
  if (reservation && reservation.kind !== 'replay') await concludeKey(reservation, 'held', executionId, response);
  return response;
}
