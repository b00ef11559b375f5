import {
  concatHex,
  createPublicClient,
  createWalletClient,
  encodeAbiParameters,
  encodeFunctionData,
  getAddress,
  isAddress,
  isAddressEqual,
  pad,
  parseErc6492Signature,
  parseSignature,
  publicActions,
  toEventSelector,
  toFunctionSelector,
} from 'viem';
import type { AbiParameter, Chain, Hex, LocalAccount, Log, PublicClient, TransactionReceipt } from 'viem';
import type { FacilitatorClient } from '@x402/core/server';
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from '@x402/core/types';
import { x402Facilitator } from '@x402/core/facilitator';
import { eip3009ABI, startAssetContractCheck, toFacilitatorEvmSigner } from '@x402/evm';
import { ExactEvmScheme as ExactEvmFacilitatorScheme } from '@x402/evm/exact/facilitator';
import { createNonceManager, type NonceManager } from '../chains/nonces.ts';
import { waitForReceipt } from '../chains/receipt-watcher.ts';
import { rpcTransport } from '../chains/rpc-transport.ts';
import { isRpcUnreachable } from '../chains/rpc-errors.ts';
import {
  applyGasMultiplier,
  BroadcastRejectedError,
  defaultGasLimitMultiplier,
  PreflightError,
  replaceStuckSend,
  revertReason,
  signAndBroadcast,
} from '../chains/transactions.ts';
import { isRecord } from '../is-record.ts';
import { recentAnswers } from './recent-answers.ts';

/**
 * The in-process facilitator. Verification is x402's own (signature, payee,
 * amount, validity window, and a simulation of the transfer on chain), except
 * that an EOA's well-formed payment is accepted on the token's word: x402's
 * field checks here, and the simulated transfer checks the signature on chain
 * (acceptedOnChain below); anything else, every refusal included, is x402's;
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
 *  - x402's verification reads the payer's code twice; the second read is
 *    answered from the first (CODE_MS);
 *  - a settlement counts only with a successful receipt holding the payer's
 *    Transfer to the payee of exactly the amount.
 */

/** How long a successful verification stands in for the settlement's own; the settlement's gas estimate re-checks the chain. */
const VERIFIED_MS = 60_000;
/** At most this many remembered verifications; the oldest go first. */
const VERIFIED_MAX = 10_000;
/**
 * A payer's code, once read, answers further reads for this long from its answer: the reads of one verification
 * (ours, then x402's two) become one, however slowly the node answers the calls between them. A stale answer is
 * harmless either way: "no code" only means the simulated transfer, where the token checks the signature itself,
 * decides; "code" sends the payment to x402's own judgement.
 */
const CODE_MS = 5_000;
/** How long a simulation started ahead of x402's verification waits to be asked for by it. */
const SIMULATION_AHEAD_MS = 2_000;
/** As x402's facilitator signer: how long a settlement waits for its receipt (FLOWGATE_PAYMENT_CONFIRMATION_MS). */
const CONFIRMATION_MS = 180_000;
/** At most this many settlements answered `settlement_pending` are remembered (so none is sent twice). */
const PENDING_MAX = 10_000;
/**
 * A settlement unmined this long while first in the facilitator's line is replaced once with higher fees
 * (replaceStuckSend): a block or two on a slow chain, and anvil's pool can hold one for good.
 */
const STUCK_AFTER_MS = 30_000;

/**
 * transferWithAuthorization's calldata, by overload ((v, r, s): 9 arguments; bytes: 7), with each selector
 * hashed once: viem's encodeFunctionData hashes the function's signature on every call (60 of its 70 µs here),
 * and a paid call encodes the transfer three times (the simulation's key, the simulation, the settlement).
 */
const transferOverloads = new Map<number, { selector: Hex; inputs: readonly AbiParameter[] }>(
  eip3009ABI
    .filter((item) => item.type === 'function' && item.name === 'transferWithAuthorization')
    .map((item) => [item.inputs.length, { selector: toFunctionSelector(item), inputs: item.inputs }]),
);
export function transferWithAuthorizationData(args: readonly unknown[]): Hex {
  const overload = transferOverloads.get(args.length);
  // No such overload: viem's encoder, for its error.
  if (!overload) return encodeFunctionData({ abi: eip3009ABI, functionName: 'transferWithAuthorization', args } as never);
  return concatHex([overload.selector, encodeAbiParameters(overload.inputs, args as never)]);
}

const TRANSFER_TOPIC = toEventSelector('Transfer(address,address,uint256)');
const addressTopic = (address: string) => pad(address.toLowerCase() as Hex);

/**
 * Whether `logs` hold the token's Transfer(from, to, value) of exactly `value`: matched on its topics and data
 * as they are emitted (an ERC-20 Transfer: two indexed addresses, one 32-byte amount), instead of decoding every
 * log with parseEventLogs, which hashes the event's signature for each receipt.
 */
export function paysExactly(logs: readonly Pick<Log, 'address' | 'topics' | 'data'>[], asset: string, from: string, to: string, value: bigint): boolean {
  const fromTopic = addressTopic(from);
  const toTopic = addressTopic(to);
  return logs.some(
    ({ address, topics, data }) =>
      isAddressEqual(address, asset as Hex) &&
      topics.length === 3 &&
      topics[0]?.toLowerCase() === TRANSFER_TOPIC &&
      topics[1]?.toLowerCase() === fromTopic &&
      topics[2]?.toLowerCase() === toTopic &&
      /^0x[0-9a-fA-F]{64}$/.test(data) &&
      BigInt(data) === value,
  );
}

interface Authorization {
  from: string;
  to: string;
  value: string;
  validAfter: string;
  validBefore: string;
  nonce: Hex;
}

function eip3009(payload: PaymentPayload): { authorization: Authorization; signature: Hex } | undefined {
  const inner = payload.payload;
  if (!isRecord(inner) || !isRecord(inner.authorization) || typeof inner.signature !== 'string') return undefined;
  return { authorization: inner.authorization as unknown as Authorization, signature: inner.signature as Hex };
}

/** The same authorization checked against the same offer. */
const verificationKey = (payload: PaymentPayload, requirements: PaymentRequirements) => JSON.stringify([payload.payload, requirements]);

/** transferWithAuthorization's leading arguments (who, to whom, how much, when, which nonce). */
const authorizationArgs = (auth: Authorization) =>
  [getAddress(auth.from), getAddress(auth.to), BigInt(auth.value), BigInt(auth.validAfter), BigInt(auth.validBefore), auth.nonce] as const;

/** transferWithAuthorization's arguments with an EOA's (v, r, s), as x402 simulates and settles it; undefined for a smart wallet's bytes. */
function ecdsaTransferArgs({ authorization, signature }: { authorization: Authorization; signature: Hex }) {
  const inner = parseErc6492Signature(signature).signature;
  if (inner.length !== 132) return undefined;
  const { v, yParity, r, s } = parseSignature(inner);
  return [...authorizationArgs(authorization), Number(v ?? BigInt(yParity + 27)), r, s] as const;
}

/** transferWithAuthorization's calldata: (v, r, s) for an EOA's signature, bytes for a deployed smart wallet's (as x402's settle). */
function transferCalldata(transfer: { authorization: Authorization; signature: Hex }): { data: Hex; ecdsa: boolean } {
  const ecdsa = ecdsaTransferArgs(transfer);
  const args = ecdsa ?? [...authorizationArgs(transfer.authorization), parseErc6492Signature(transfer.signature).signature];
  return { data: transferWithAuthorizationData(args), ecdsa: ecdsa !== undefined };
}

export function createLocalFacilitator(
  account: LocalAccount,
  chain: Chain,
  rpcUrl: string,
  network: PaymentRequirements['network'],
  nonces: NonceManager = createNonceManager(),
  options: { stuckAfterMs?: number; confirmationMs?: number } = {},
): FacilitatorClient {
  const stuckAfterMs = options.stuckAfterMs ?? STUCK_AFTER_MS;
  const confirmationMs = options.confirmationMs ?? CONFIRMATION_MS;
  /** Settlements sent but unmined when their wait ran out (answered `settlement_pending`), by payer and nonce: never sent twice. */
  const pending = new Map<string, Hex>();
  const pendingKey = (payer: string, nonce: string) => `${payer}:${nonce}`.toLowerCase();
  // The gateway's keep-alive transport (src/chains/rpc-transport.ts): cheaper per call than viem's batched fetch.
  const transport = rpcTransport(rpcUrl, { retryCount: 1, timeout: 15_000 });
  const client = createPublicClient({ chain, transport }) as PublicClient;
  const wallet = createWalletClient({ account, chain, transport }).extend(publicActions);
  const codes = new Map<string, { at: number; code: ReturnType<typeof wallet.getCode> }>();
  const getCode: typeof wallet.getCode = (args) => {
    const key = args.address.toLowerCase();
    const seen = codes.get(key);
    const now = Date.now();
    if (seen && now - seen.at < CODE_MS) return seen.code;
    // Entries sit in about the order they were read: the expired ones are at the front.
    codes.delete(key);
    for (const [k, v] of codes) {
      if (now - v.at < CODE_MS) break;
      codes.delete(k);
    }
    const code = wallet.getCode(args);
    const entry = { at: now, code };
    codes.set(key, entry);
    code.then(
      () => void (entry.at = Date.now()),
      () => codes.get(key) === entry && codes.delete(key),
    );
    return code;
  };
  /**
   * x402's verification recovers the signer (secp256k1, about 3-4 ms of CPU here) and only then simulates the
   * transfer on chain. verify() starts that same simulation first, so the node works on it during the recovery;
   * x402's read of it is answered by that call (once, and only within SIMULATION_AHEAD_MS). x402 still decides on
   * its result: nothing it checks is skipped. Its first step, a read of the payer's code, is started here too, so
   * that round trip overlaps the simulation's instead of preceding it (answered by the same read, see CODE_MS).
   */
  const simulationsAhead = new Map<string, Promise<unknown>>();
  const simulationKey = (address: string, data: Hex) => `${address.toLowerCase()}:${data}`;
  const readContract: typeof wallet.readContract = ((args: Parameters<typeof wallet.readContract>[0]) => {
    if (args.functionName === 'transferWithAuthorization') {
      const key = simulationKey(String(args.address), transferWithAuthorizationData(args.args ?? []));
      const ahead = simulationsAhead.get(key);
      if (ahead) {
        simulationsAhead.delete(key);
        return ahead;
      }
    }
    return wallet.readContract(args);
  }) as typeof wallet.readContract;
  /** Starts the payer's code read and the simulation; the simulation is answered to x402's read of it, or taken by the caller (drop). */
  const simulateAhead = (payload: PaymentPayload, requirements: PaymentRequirements) => {
    const transfer = eip3009(payload);
    if (transfer && isAddress(transfer.authorization.from)) getCode({ address: getAddress(transfer.authorization.from) }).catch(() => {});
    // A smart wallet's (ERC-1271 or ERC-6492) signature is checked another way first: left to x402 as it is.
    const args = transfer && ecdsaTransferArgs(transfer);
    // Bounded like the verifications: a flood of payments never taken up by x402 cannot grow it without limit.
    if (!args || simulationsAhead.size >= VERIFIED_MAX) return undefined;
    const asset = getAddress(requirements.asset);
    const key = simulationKey(asset, transferWithAuthorizationData(args));
    const simulation = wallet.readContract({ address: asset, abi: eip3009ABI, functionName: 'transferWithAuthorization', args } as never) as Promise<unknown>;
    simulation.catch(() => {});
    simulationsAhead.set(key, simulation);
    const drop = () => simulationsAhead.get(key) === simulation && simulationsAhead.delete(key);
    setTimeout(drop, SIMULATION_AHEAD_MS).unref();
    return { simulation, drop };
  };
  const signer = toFacilitatorEvmSigner({ ...wallet, getCode, readContract, address: account.address } as unknown as Parameters<
    typeof toFacilitatorEvmSigner
  >[0]);
  const x402 = new x402Facilitator().register(network, new ExactEvmFacilitatorScheme(signer));
  /** Gas limit per token for EOA-signed transfers, from the first estimate. */
  const gasLimits = new Map<string, bigint>();

  // Only a success is remembered: a refusal is asked again next time.
  const verified = recentAnswers<VerifyResponse>(VERIFIED_MAX, (answer) => answer.isValid);

  /**
   * x402's checks of an EOA payment's fields, which need no read of the chain: scheme, network, x402 version,
   * EIP-712 domain named, payee, amount, and the validity window with its 6 s margin. False for anything else (a
   * smart wallet's or ERC-6492 signature, a field that differs): x402's own verification judges it.
   */
  function fieldsAccepted(payload: PaymentPayload, requirements: PaymentRequirements): boolean {
    const transfer = eip3009(payload);
    // A plain 65-byte signature only: an ERC-6492 wrapper (a wallet not deployed yet) is x402's to judge.
    if (!transfer || !/^0x[0-9a-fA-F]{130}$/.test(transfer.signature)) return false;
    const { extra } = requirements;
    const accepted: Record<string, unknown> = isRecord(payload.accepted) ? payload.accepted : {};
    if (payload.x402Version !== 2 || requirements.network !== network || accepted.network !== network) return false;
    if (requirements.scheme !== 'exact' || accepted.scheme !== 'exact' || !extra?.name || !extra?.version) return false;
    const auth = transfer.authorization;
    if (!isAddress(auth.from) || !isAddress(auth.to) || !isAddress(requirements.payTo) || !isAddress(requirements.asset)) return false;
    if (getAddress(auth.to) !== getAddress(requirements.payTo)) return false;
    const now = BigInt(Math.floor(Date.now() / 1000));
    return BigInt(auth.validBefore) >= now + 6n && BigInt(auth.validAfter) <= now && BigInt(auth.value) === BigInt(requirements.amount);
  }

  /**
   * An EOA's payment whose fields passed, accepted on the token's own word: the asset a contract, the payer without
   * code, and the transfer simulated on chain, where the token checks the signature itself (ecrecover against
   * `from`), the nonce, the window and the balance, as it will when the settlement is mined. That spares x402's
   * recovery of the signer in JavaScript (2-3 ms of CPU per payment) and its layers. Anything else answers undefined
   * and x402's own verification decides: a payer with code, a failed simulation (x402 then diagnoses it: its reasons
   * are the ones a payer sees), an unreachable node.
   */
  async function acceptedOnChain(
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    simulation: Promise<unknown>,
  ): Promise<VerifyResponse | undefined> {
    const auth = eip3009(payload)!.authorization;
    // All three at once, each awaited (a read that fails after another has is still handled): a failure is x402's to judge.
    const [payerCode, assetRefusal] = await Promise.all([
      getCode({ address: getAddress(auth.from) }),
      startAssetContractCheck(signer, network, getAddress(requirements.asset)).await(),
      simulation,
    ]);
    if (assetRefusal !== '' || (payerCode && payerCode !== '0x')) return undefined;
    return { isValid: true, invalidReason: undefined, payer: auth.from };
  }

  /** x402's verification, once per authorization and offer within VERIFIED_MS (a concurrent second call shares the first). */
  function verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> {
    return verified.get(
      verificationKey(payload, requirements),
      async () => {
        // A payment refused on its fields is x402's at once: nothing read from the chain for it but what x402 reads.
        // Otherwise one code read and one simulation serve both: a payment x402 has to judge reuses them.
        const ahead = fieldsAccepted(payload, requirements) ? simulateAhead(payload, requirements) : undefined;
        const onChain = ahead && (await acceptedOnChain(payload, requirements, ahead.simulation).catch(() => undefined));
        if (onChain) {
          ahead.drop();
          return onChain;
        }
        return x402.verify(payload, requirements);
      },
      (now) => now + VERIFIED_MS,
    );
  }

  /**
   * The settlement's receipt; past stuckAfterMs, a send still first in line unmined is replaced once, and
   * whichever of the two is mined answers (they share a nonce: never both).
   */
  async function settlementReceipt(hash: Hex): Promise<{ hash: Hex; receipt: TransactionReceipt }> {
    // Once one of the two is mined, the other's wait stops (it never will be: they share a nonce).
    const done = new AbortController();
    const sent = waitForReceipt(client, hash, confirmationMs, done.signal).then((receipt) => ({ hash, receipt }));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), stuckAfterMs);
    });
    const first = await Promise.race([sent, late]).finally(() => clearTimeout(timer));
    if (first) return first;
    const replacement = await replaceStuckSend(client, account, hash).catch(() => undefined);
    if (!replacement) return sent;
    console.error(`[flowgate] settlement ${hash} was first in line but unmined after ${stuckAfterMs} ms: replaced by ${replacement} with higher fees`);
    const replaced = waitForReceipt(client, replacement, Math.max(1, confirmationMs - stuckAfterMs), done.signal).then((receipt) => ({
      hash: replacement,
      receipt,
    }));
    return Promise.any([sent, replaced])
      .catch((error: AggregateError) => Promise.reject(error.errors[0]))
      .finally(() => done.abort());
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
    // Sent, and unmined when its wait ran out: x402 asks once more after a `settlement_pending` answer
    // (settleWithPendingRetry), and sending again would only race the first transaction for the same authorization.
    const sent = pending.get(pendingKey(transfer.authorization.from, transfer.authorization.nonce));
    if (sent) return refuse('settlement_pending', `the settlement ${sent} was sent and is not mined yet`, sent);
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
    let mined: TransactionReceipt | undefined;
    try {
      ({ hash, receipt: mined } = await signAndBroadcast(
        { client, account, nonces },
        { to: asset, data, value: 0n },
        {
          ...(gas === undefined ? {} : { gas }),
          abi: eip3009ABI,
          // Nothing is stored per settlement (the payment row records the hash once mined), so bytes may be re-signed for another nonce.
          replaceable: true,
          onSigned: async () => {},
        },
      ));
    } catch (error) {
      if (error instanceof PreflightError) return refuse('transaction_would_revert', error.message);
      if (error instanceof BroadcastRejectedError) return refuse('transaction_rejected', error.message);
      return refuse('transaction_failed', error instanceof Error ? error.message : String(error));
    }
    let receipt = mined;
    try {
      if (!receipt) ({ hash, receipt } = await settlementReceipt(hash));
    } catch (error) {
      // Not mined in time (or not found): the node may have dropped it, so the next send re-reads the nonce.
      nonces.resync(client, account.address);
      // It may still be mined: the payment is resolved from the chain, not failed (src/payments/settlement-outcome.ts).
      if (pending.size >= PENDING_MAX) pending.delete(pending.keys().next().value!);
      pending.set(pendingKey(transfer.authorization.from, transfer.authorization.nonce), hash);
      return refuse('settlement_pending', error instanceof Error ? error.message : String(error), hash);
    }
    if (receipt.status !== 'success') {
      // Most likely the payment was spent elsewhere since it was verified; the next settlement estimates again.
      gasLimits.delete(asset);
      return refuse('transaction_reverted', undefined, hash);
    }
    const auth = transfer.authorization;
    if (!paysExactly(receipt.logs, asset, auth.from, auth.to, BigInt(auth.value))) return refuse('transfer_event_mismatch', undefined, hash);
    return { success: true, transaction: hash, network: requirements.network, payer: getAddress(auth.from) };
  }

  return {
    verify,
    settle,
    getSupported: async () => x402.getSupported() as Awaited<ReturnType<FacilitatorClient['getSupported']>>,
  };
}
