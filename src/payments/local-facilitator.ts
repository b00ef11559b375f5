import { createPublicClient, getAddress, isAddressEqual, parseEventLogs } from 'viem';
import type { Chain, Hex, LocalAccount, PublicClient } from 'viem';
import type { FacilitatorClient } from '@x402/core/server';
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from '@x402/core/types';
import { eip3009ABI } from '@x402/evm';
import { createNonceManager, type NonceManager } from '../chains/nonces.ts';
import { waitForReceipt } from '../chains/receipt-watcher.ts';
import { rpcTransport } from '../chains/rpc-transport.ts';
import { isRpcUnreachable } from '../chains/rpc-errors.ts';
import {
  applyGasMultiplier,
  BroadcastRejectedError,
  defaultGasLimitMultiplier,
  PreflightError,
  revertReason,
  signAndBroadcast,
} from '../chains/transactions.ts';
import { eip3009, transferCalldata } from './eip3009.ts';
import { recentAnswers } from './recent-answers.ts';
import { verifierThread } from './verifier-thread.ts';
import { createX402Verification } from './x402-verification.ts';

/**
 * The in-process facilitator. Verification is x402's own (signature, payee,
 * amount, validity window, and a simulation of the transfer on chain:
 * x402-verification.ts), run on a thread of its own (verifier-thread.ts);
 * settlement is done here, not by x402's settle, because that one verifies
 * again, reads the facilitator's nonce from the node for every transaction
 * (so settlements had to go one at a time) and waits for the receipt with
 * viem's polling. Here:
 *  - a verification that succeeded is remembered briefly, so MPP's second
 *    validation and the settlement do not read the chain again ("verify once");
 *  - settlements share the gateway's send path (src/chains/transactions.ts)
 *    and its nonce manager: counted in the process (src/chains/nonces.ts), so
 *    concurrent settlements from the one gas account are pipelined instead of
 *    queued, or allocated in PostgreSQL when instances share the account
 *    (src/chains/shared-nonces.ts); and the shared receipt watcher
 *    (src/chains/receipt-watcher.ts);
 *  - the gas limit of an EOA-signed transfer is estimated once per token and
 *    reused (transferWithAuthorization costs about the same every time, and
 *    the estimate is doubled as for every send): the verification's simulation
 *    a moment earlier is the check, and a payment spent elsewhere in between
 *    is mined as a revert, which fails the settlement (and drops the cached
 *    limit, so the next one estimates again);
 *  - a settlement counts only with a successful receipt holding the payer's
 *    Transfer to the payee of exactly the amount.
 */

/** How long a successful verification stands in for the settlement's own; the settlement's gas estimate re-checks the chain. */
const VERIFIED_MS = 60_000;
/** At most this many remembered verifications; the oldest go first. */
const VERIFIED_MAX = 10_000;
/** As x402's facilitator signer: how long a settlement waits for its receipt. */
const CONFIRMATION_MS = 180_000;

const transferEvent = [
  {
    type: 'event',
    name: 'Transfer',
    inputs: [
      { name: 'from', type: 'address', indexed: true },
      { name: 'to', type: 'address', indexed: true },
      { name: 'value', type: 'uint256', indexed: false },
    ],
  },
] as const;

/** The same authorization checked against the same offer. */
const verificationKey = (payload: PaymentPayload, requirements: PaymentRequirements) => JSON.stringify([payload.payload, requirements]);

export function createLocalFacilitator(
  account: LocalAccount,
  chain: Chain,
  rpcUrl: string,
  network: PaymentRequirements['network'],
  nonces: NonceManager = createNonceManager(),
): FacilitatorClient {
  // The gateway's keep-alive transport (src/chains/rpc-transport.ts): cheaper per call than viem's batched fetch.
  const transport = rpcTransport(rpcUrl, { retryCount: 1, timeout: 15_000 });
  const client = createPublicClient({ chain, transport }) as PublicClient;
  // x402's verification, on the verifier thread when it is up (verifier-thread.ts), else here: the same either way.
  const verification = { rpcUrl, chainId: chain.id, network, address: account.address };
  const onThisThread = createX402Verification(verification);
  const verifyPayment = verifierThread(verification, onThisThread.verify);
  /** Gas limit per token for EOA-signed transfers, from the first estimate. */
  const gasLimits = new Map<string, bigint>();

  // Only a success is remembered: a refusal is asked again next time.
  const verified = recentAnswers<VerifyResponse>(VERIFIED_MAX, (answer) => answer.isValid);

  /** x402's verification, once per authorization and offer within VERIFIED_MS (a concurrent second call shares the first). */
  function verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> {
    return verified.get(
      verificationKey(payload, requirements),
      () => verifyPayment(payload, requirements),
      (now) => now + VERIFIED_MS,
    );
  }

  async function settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    const transfer = eip3009(payload);
    const payer = transfer?.authorization.from;
    const refuse = (errorReason: string, errorMessage?: string, transaction = ''): SettleResponse => ({
      success: false,
      errorReason,
      ...(errorMessage ? { errorMessage } : {}),
      transaction,
      network: requirements.network,
      ...(payer ? { payer } : {}),
    });
    if (!transfer) return refuse('unsupported_payload', 'the in-process facilitator settles EIP-3009 authorizations only');
    // Fail closed: nothing is sent for a payment this facilitator has not verified as valid.
    const key = verificationKey(payload, requirements);
    const check = await verify(payload, requirements).catch((error: unknown) => ({ isValid: false, invalidReason: String(error) }) as VerifyResponse);
    verified.forget(key);
    if (!check.isValid) return refuse(check.invalidReason ?? 'invalid_payment', check.invalidMessage);

    const asset = getAddress(requirements.asset);
    const { data, ecdsa } = transferCalldata(transfer);
    let gas = ecdsa ? gasLimits.get(asset) : undefined;
    if (ecdsa && gas === undefined) {
      try {
        gas = applyGasMultiplier(await client.estimateGas({ account: account.address, to: asset, data }), defaultGasLimitMultiplier(chain.id));
      } catch (error) {
        if (isRpcUnreachable(error)) return refuse('transaction_failed', error instanceof Error ? error.message : String(error));
        return refuse('transaction_would_revert', `The transaction would revert: ${revertReason(error, eip3009ABI)}`);
      }
      gasLimits.set(asset, gas);
    }
    let hash: Hex;
    try {
      hash = await signAndBroadcast(
        { client, account, nonces },
        { to: asset, data, value: 0n },
        {
          ...(gas === undefined ? {} : { gas }),
          abi: eip3009ABI,
          // Nothing is stored per settlement (the payment row records the hash once mined), so bytes may be re-signed for another nonce.
          replaceable: true,
          onSigned: async () => {},
        },
      );
    } catch (error) {
      if (error instanceof PreflightError) return refuse('transaction_would_revert', error.message);
      if (error instanceof BroadcastRejectedError) return refuse('transaction_rejected', error.message);
      return refuse('transaction_failed', error instanceof Error ? error.message : String(error));
    }
    let receipt;
    try {
      receipt = await waitForReceipt(client, hash, CONFIRMATION_MS);
    } catch (error) {
      // Not mined in time (or not found): the node may have dropped it, so the next send re-reads the nonce.
      nonces.resync(client, account.address);
      return refuse('settlement_pending', error instanceof Error ? error.message : String(error), hash);
    }
    if (receipt.status !== 'success') {
      // Most likely the payment was spent elsewhere since it was verified; the next settlement estimates again.
      gasLimits.delete(asset);
      return refuse('transaction_reverted', undefined, hash);
    }
    const auth = transfer.authorization;
    const paid = parseEventLogs({ abi: transferEvent, eventName: 'Transfer', logs: receipt.logs.filter((log) => isAddressEqual(log.address, asset)) }).some(
      (log) =>
        isAddressEqual(log.args.from, getAddress(auth.from)) && isAddressEqual(log.args.to, getAddress(auth.to)) && log.args.value === BigInt(auth.value),
    );
    if (!paid) return refuse('transfer_event_mismatch', undefined, hash);
    return { success: true, transaction: hash, network: requirements.network, payer: getAddress(auth.from) };
  }

  return {
    verify,
    settle,
    getSupported: async () => onThisThread.getSupported() as Awaited<ReturnType<FacilitatorClient['getSupported']>>,
  };
}
