import { encodeFunctionData, decodeFunctionData, erc20Abi, parseEther, type Abi, type AbiFunction, type Address, type Hex } from 'viem';
import { resolveChainOrThrow, type ChainEntry } from '../chains/catalog.ts';
import { isRpcUnreachable, orRpcUnavailable, rpcUnavailable, RpcUnavailableError } from '../chains/rpc-errors.ts';
import { rebroadcast, revertReason, simulateTransaction, verifyTransaction, type TransactionRequest } from '../chains/transactions.ts';
import { badRequest, ServiceError } from '../errors.ts';
import { concludeKey, replayBody, reserveIdempotencyKey } from '../guards/idempotency.ts';
import { settleSpendForExecution, spendCapData, spendOutcome } from '../guards/spend-cap.ts';
import { stablecoinLimitViolation } from '../guards/stablecoin-limit.ts';
import { newId } from '../ids.ts';
import type { Services } from '../services.ts';
import { organizationAccount } from '../wallets/signer.ts';
import { guardedSend, type WriteOutcome } from './guarded-send.ts';
import {
  findFunction,
  parseAbiDocument,
  parseAmount,
  parseErrorAbis,
  parseEvmAddress,
  parseFunctionArgs,
  parseGasLimitMultiplier,
  parseTokenConfig,
  pickFunctionName,
} from './money-inputs.ts';
import { finish, insertPending, loadRecord, receiptError, statusFromReceipts, storeSigned, toRecord } from './records.ts';

/**
 * Direct execution (SPEC "Direct execution"): transfers and contract calls
 * signed by the organization wallet, through the one guarded write path.
 * Order per DESIGN: (auth, scope, rate limit at the registry edge) →
 * validation → wallet → simulate short-circuit → idempotency → spend cap
 * with the execution row → stablecoin limit → sign/store/broadcast → verify.
 */

export interface DirectCaller {
  organizationId: string;
  apiKeyId: string | null;
  /** False for read-only keys: they may simulate and read, never broadcast. */
  canBroadcast: boolean;
  idempotencyKey?: string;
}

export interface DirectResponse {
  status: number;
  body: unknown;
}

/** A chain from `chainId` (canonical) or the deprecated `network` alias; `chainId` wins. */
export function selectChain(services: Pick<Services, 'chains'>, chainId: unknown, network: unknown): ChainEntry {
  const ref = chainId ?? network;
  if (ref === undefined || ref === null || ref === '')
    throw badRequest('invalid_input', 'chainId is required: a numeric chain id such as 8453 (see GET /api/chains).', { field: 'chainId' });
  if (typeof ref !== 'string' && typeof ref !== 'number')
    throw badRequest('invalid_input', `chainId must be a number or numeric string (got ${typeof ref}).`, { field: 'chainId' });
  if (chainId !== undefined && chainId !== null && chainId !== '' && !/^\d+$/.test(String(chainId).trim())) {
    throw badRequest(
      'unsupported_chain',
      `chainId must be numeric (got ${JSON.stringify(chainId)}); chain names are accepted only in the deprecated network field.`,
      { field: 'chainId' },
    );
  }
  const chain = resolveChainOrThrow(services.chains, ref);
  if (!chain.isEnabled)
    throw badRequest('chain_disabled', `Chain ${chain.name} (${chain.chainId}) is not enabled on this gateway.`, { chainId: chain.chainId });
  if (chain.chainType !== 'evm') {
    throw new ServiceError(
      400,
      'unsupported_chain',
      `Direct execution on ${chain.name} (${chain.chainId}) is not available on this gateway yet; use an EVM chain.`,
      { chainId: chain.chainId },
    );
  }
  return chain;
}

export const insufficientScopeToBroadcast = () =>
  new ServiceError(403, 'insufficient_scope', 'insufficient_scope', {
    required_scope: 'mcp:write',
    message: 'This key has scope mcp:read: it may simulate (simulate: true) and read status, but broadcasting needs mcp:write or mcp:admin.',
  });

export interface PreparedWrite {
  type: string;
  chain: ChainEntry;
  request: TransactionRequest;
  abi?: Abi;
  gasLimitMultiplier?: string;
  /** Extra fields stored as the record's `result` (the decoded call, say). */
  result?: Record<string, unknown>;
}

/** The simulation response (SPEC "Simulation response"); reserves nothing. */
async function simulate(services: Services, caller: DirectCaller, write: PreparedWrite): Promise<DirectResponse> {
  const account = await organizationAccount(services.store, services.secrets, caller.organizationId);
  const client = services.chainClients.publicClient(write.chain.chainId);
  const sim = await orRpcUnavailable(write.chain, () => simulateTransaction(client, account.address, write.request, write.abi), 'nothing was simulated');
  const body: Record<string, unknown> = {
    success: !sim.wouldRevert,
    status: 'simulated',
    from: account.address,
    to: write.request.to,
    value: write.request.value.toString(),
    gasEstimate: sim.gasEstimate.toString(),
    wouldRevert: sim.wouldRevert,
    ...(sim.reason ? { reason: sim.reason } : {}),
  };
  // Limits that would refuse the real call are reported too, with the limit.
  const stablecoin = stablecoinLimitViolation(services.stablecoins, services.config.spend.stablecoinCapMicroUsd, {
    chainId: write.chain.chainId,
    ...write.request,
  });
  const refuse = (reason: string, limit: Record<string, string>) => Object.assign(body, { success: false, reason: body.reason ?? reason, ...limit });
  if (stablecoin) refuse(stablecoin, { stablecoinLimitMicroUsd: services.config.spend.stablecoinCapMicroUsd.toString() });
  if (write.request.value > 0n) {
    const caps = await spendCapData(services.store, services.config, caller.organizationId);
    if (BigInt(caps.dailyUsedWei) + write.request.value > BigInt(caps.effectiveDailyCapWei)) {
      refuse('Daily spending cap exceeded', { dailyCapWei: caps.effectiveDailyCapWei, dailyUsedWei: caps.dailyUsedWei });
    }
  }
  if (sim.wouldRevert && write.type === 'transfer') {
    throw new ServiceError(400, 'simulation_failed', `Simulation failed: the transfer would revert (${sim.reason}).`, body);
  }
  return { status: 200, body };
}

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
  let reservation = scope ? await reserveIdempotencyKey(services.store, scope, canonicalRequest, staleAfterMs(services)) : undefined;
  if (reservation?.kind === 'replay') return { status: reservation.response.status, body: replayBody(reservation.response.body) };
  if (reservation?.kind === 'stale') {
    const recovered = await recoverInterrupted(services, caller, reservation);
    if (recovered) return recovered;
    reservation = await reserveIdempotencyKey(services.store, scope!, canonicalRequest);
    if (reservation.kind === 'replay') return { status: reservation.response.status, body: replayBody(reservation.response.body) };
  }

  const executionId = newId();
  let outcome: WriteOutcome;
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
        onSigned: async (hash, raw) => {
          await storeSigned(services.store, executionId, hash, raw);
          await reservation?.attach(executionId);
        },
      },
    );
  } catch (error) {
    await reservation?.release();
    // The row exists only if the spend reservation committed; a failure after that ends it failed.
    await services.store
      .updateTable('direct_executions')
      .set({ status: 'failed', error: (error as Error).message, completed_at: new Date().toISOString() })
      .where('id', '=', executionId)
      .where('status', '=', 'pending')
      .execute();
    if (error instanceof ServiceError) throw error;
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

/** A request can take at most the receipt wait plus estimation and signing; an in-progress key older than this lost its process. */
const staleAfterMs = (services: Services) => services.config.receiptTimeoutMs + 120_000;

/**
 * Recovers an execution whose process died mid-flight, checking the chain
 * before anything is signed again: stored bytes are re-sent (same nonce, same
 * hash: they can never spend twice) and verified. Without stored bytes
 * nothing was broadcast: the row fails, the key is released, and the caller
 * runs the request afresh (returns undefined).
 */
async function recoverInterrupted(
  services: Services,
  caller: DirectCaller,
  reservation: Extract<Awaited<ReturnType<typeof reserveIdempotencyKey>>, { kind: 'stale' }>,
): Promise<DirectResponse | undefined> {
  const row = reservation.executionId
    ? await services.store
        .selectFrom('direct_executions')
        .selectAll()
        .where('id', '=', reservation.executionId)
        .where('organization_id', '=', caller.organizationId)
        .executeTakeFirst()
    : undefined;
  if (!row?.signed_transaction || !row.transaction_hash) {
    if (row) {
      await finish(services.store, row.id, {
        status: 'failed',
        receipts: [],
        error: 'The gateway stopped before this transaction was signed; nothing was broadcast.',
      });
      await settleSpendForExecution(services.store, row.id, 'released');
    }
    await reservation.release();
    return undefined;
  }
  const client = services.chainClients.publicClient(row.chain_id);
  let receipt = await verifyTransaction(client, row.transaction_hash as Hex, 2_000);
  if (receipt.receiptStatus === 'not_found' || receipt.receiptStatus === 'timeout') {
    await rebroadcast(client, row.signed_transaction as Hex).catch(() => {});
    receipt = await verifyTransaction(client, row.transaction_hash as Hex, services.config.receiptTimeoutMs);
  }
  const receipts = [receipt];
  const status = statusFromReceipts(receipts);
  await finish(services.store, row.id, { status, receipts, error: receiptError(receipts) ?? null });
  const spend = spendOutcome(receipt.receiptStatus);
  if (spend) await settleSpendForExecution(services.store, row.id, spend);
  const response: DirectResponse = { status: 202, body: toRecord(services.chains, await loadRecord(services.store, caller.organizationId, row.id)) };
  await concludeKey(reservation, receipt.receiptStatus === 'reverted' ? 'released' : status === 'completed' ? 'completed' : 'held', row.id, response);
  return { status: response.status, body: replayBody(response.body) };
}

// ---- transfer ---------------------------------------------------------------

export interface TransferInput {
  chainId?: string | number;
  network?: string | number;
  recipientAddress: string;
  amount: string | number;
  tokenAddress?: string;
  tokenConfig?: string | Record<string, unknown>;
  gasLimitMultiplier?: string | number;
  simulate?: boolean;
}

/**
 * The token's decimals as the chain reports them. A configured value is
 * used only when the token cannot be read, and refused when it disagrees:
 * a wrong value would scale the amount by a power of ten.
 */
async function tokenDecimals(services: Services, chainId: number, token: Address, configured?: number): Promise<number> {
  let onChain: number | undefined;
  try {
    onChain = await services.chainClients.publicClient(chainId).readContract({ address: token, abi: erc20Abi, functionName: 'decimals' });
  } catch (error) {
    if (isRpcUnreachable(error)) throw rpcUnavailable({ name: services.chains.get(chainId)?.name ?? `chain ${chainId}`, chainId }, 'nothing was read or sent');
    onChain = services.stablecoins.lookup(chainId, token)?.decimals;
  }
  if (onChain !== undefined && configured !== undefined && configured !== onChain) {
    throw badRequest(
      'token_decimals_mismatch',
      `tokenConfig.decimals is ${configured} but token ${token} has ${onChain} decimals on chain ${chainId}; fix or omit tokenConfig.decimals.`,
      { tokenAddress: token, configured, onChain },
    );
  }
  const decimals = onChain ?? configured;
  if (decimals === undefined) {
    throw badRequest(
      'token_decimals_unknown',
      `Could not read decimals() from token ${token} on chain ${chainId}; pass tokenConfig {"decimals": N, "symbol": "..."}.`,
      { tokenAddress: token },
    );
  }
  return decimals;
}

export async function prepareTransfer(services: Services, input: TransferInput): Promise<{ write: PreparedWrite }> {
  const chain = selectChain(services, input.chainId, input.network);
  const recipient = parseEvmAddress(input.recipientAddress, 'recipientAddress', 'recipient address');
  const tokenConfig = parseTokenConfig(input.tokenConfig);
  const gasLimitMultiplier = parseGasLimitMultiplier(input.gasLimitMultiplier);
  const tokenRef = input.tokenAddress ?? tokenConfig.address;
  if (!tokenRef) {
    const value = parseAmount(input.amount, 18);
    if (value === 0n) throw badRequest('invalid_amount', 'amount must be greater than 0.', { field: 'amount' });
    return {
      write: {
        type: 'transfer',
        chain,
        request: { to: recipient, value },
        gasLimitMultiplier,
        result: { recipientAddress: recipient, amount: String(input.amount), token: null },
      },
    };
  }
  const token = parseEvmAddress(tokenRef, 'tokenAddress', 'token address');
  const decimals = await tokenDecimals(services, chain.chainId, token, tokenConfig.decimals);
  const raw = parseAmount(input.amount, decimals);
  if (raw === 0n) throw badRequest('invalid_amount', 'amount must be greater than 0.', { field: 'amount' });
  const data = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [recipient, raw] });
  const symbol = tokenConfig.symbol ?? services.stablecoins.lookup(chain.chainId, token)?.symbol ?? null;
  return {
    write: {
      type: 'transfer',
      chain,
      request: { to: token, data, value: 0n },
      abi: erc20Abi,
      gasLimitMultiplier,
      result: { recipientAddress: recipient, amount: String(input.amount), token, symbol, decimals, amountRaw: raw.toString() },
    },
  };
}

// ---- contract call ------------------------------------------------------------

export interface ContractCallInput {
  contractAddress: string;
  chainId?: string | number;
  network?: string | number;
  functionName?: string;
  abiFunction?: string;
  functionArgs?: string | unknown[];
  abi?: string | unknown[];
  errorAbis?: unknown;
  value?: string | number;
  gasLimitMultiplier?: string | number;
  simulate?: boolean;
  data?: string;
}

export interface PreparedCall {
  chain: ChainEntry;
  contract: Address;
  abi: Abi;
  fn: AbiFunction;
  args: unknown[];
  data: Hex;
  value: bigint;
  gasLimitMultiplier?: string;
  errorAbi: Abi;
}

const isRead = (fn: AbiFunction) => fn.stateMutability === 'view' || fn.stateMutability === 'pure';

async function resolveAbi(services: Services, chain: ChainEntry, contract: Address, abi: unknown): Promise<Abi> {
  if (abi !== undefined && abi !== null && abi !== '') return parseAbiDocument(abi);
  const found = await services.abiLookup.lookup(chain.chainId, contract);
  return found.abi as Abi;
}

export async function prepareContractCall(services: Services, input: ContractCallInput): Promise<PreparedCall> {
  const chain = selectChain(services, input.chainId, input.network);
  const contract = parseEvmAddress(input.contractAddress, 'contractAddress', 'contract address');
  const name = pickFunctionName(input.functionName, input.abiFunction);
  const errorAbi = parseErrorAbis(input.errorAbis);
  const gasLimitMultiplier = parseGasLimitMultiplier(input.gasLimitMultiplier);
  const value = input.value === undefined || input.value === null || input.value === '' ? 0n : parseAmount(input.value, 18, 'value');
  if (!name && !input.data)
    throw badRequest('invalid_input', 'functionName is required (alias abiFunction), or raw calldata in data.', { field: 'functionName' });
  const abi = await resolveAbi(services, chain, contract, input.abi);

  let fn: AbiFunction;
  let args: unknown[];
  if (input.data !== undefined && input.data !== '') {
    if (typeof input.data !== 'string' || !/^0x([0-9a-fA-F]{2})*$/.test(input.data) || input.data.length < 10) {
      throw badRequest('invalid_calldata', 'data must be 0x-prefixed hex calldata starting with a 4-byte selector.', { field: 'data' });
    }
    let decoded;
    try {
      decoded = decodeFunctionData({ abi, data: input.data as Hex });
    } catch {
      throw badRequest('invalid_calldata', `data ${input.data.slice(0, 10)}… does not match any function of the ABI.`, {
        field: 'data',
        selector: input.data.slice(0, 10),
      });
    }
    fn = findFunction(abi, decoded.functionName, decoded.args?.length ?? 0);
    if (name && name.replace(/\(.*$/, '') !== fn.name)
      throw badRequest('function_name_conflict', `functionName "${name}" disagrees with the calldata, which calls "${fn.name}".`, {
        functionName: name,
        decoded: fn.name,
      });
    args = [...(decoded.args ?? [])];
  } else {
    args = parseFunctionArgs(input.functionArgs);
    fn = findFunction(abi, name!, args.length);
  }
  let data: Hex;
  try {
    data = encodeFunctionData({ abi: [fn], functionName: fn.name, args });
  } catch (error) {
    const detail = (error as { shortMessage?: string }).shortMessage ?? (error as Error).message;
    throw badRequest('function_args_mismatch', `functionArgs do not fit ${fn.name}(${fn.inputs.map((i) => i.type).join(', ')}): ${detail}`, {
      functionName: fn.name,
    });
  }
  if (value > 0n && fn.stateMutability !== 'payable')
    throw badRequest('invalid_value', `${fn.name} is not payable; send value only to payable functions.`, { field: 'value' });
  return { chain, contract, abi, fn, args, data, value, gasLimitMultiplier, errorAbi };
}

const jsonSafe = (value: unknown): unknown =>
  typeof value === 'bigint'
    ? value.toString()
    : Array.isArray(value)
      ? value.map(jsonSafe)
      : value && typeof value === 'object'
        ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonSafe(v)]))
        : value;

/** Reads a view/pure function; no signing, no record. */
export async function readCall(services: Services, call: PreparedCall): Promise<unknown> {
  try {
    const result = await services.chainClients
      .publicClient(call.chain.chainId)
      .readContract({ address: call.contract, abi: [...call.abi, ...call.errorAbi], functionName: call.fn.name, args: call.args });
    return jsonSafe(result);
  } catch (error) {
    if (isRpcUnreachable(error)) throw rpcUnavailable(call.chain, 'nothing was read');
    throw new ServiceError(
      400,
      'read_reverted',
      `Reading ${call.fn.name} on ${call.contract} failed: ${revertReason(error, [...call.abi, ...call.errorAbi])}`,
      { functionName: call.fn.name },
    );
  }
}

export function writeOf(call: PreparedCall, type = 'contract-call'): PreparedWrite {
  return {
    type,
    chain: call.chain,
    request: { to: call.contract, data: call.data, value: call.value },
    abi: [...call.abi, ...call.errorAbi],
    gasLimitMultiplier: call.gasLimitMultiplier,
    result: { functionName: call.fn.name, args: jsonSafe(call.args) },
  };
}

export { isRead, jsonSafe };
