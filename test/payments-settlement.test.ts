import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { createPublicClient, encodeFunctionData, http as viemHttp, keccak256, parseSignature, toHex, type Address, type Hex } from 'viem';
import { authorizationTypes, eip3009ABI, toFacilitatorEvmSigner } from '@x402/evm';
import { ExactEvmScheme as ExactEvmFacilitatorScheme } from '@x402/evm/exact/facilitator';
import { x402Facilitator } from '@x402/core/facilitator';
import type { PaymentPayload } from '@x402/core/types';
import { testUsdcAbi } from '../src/chains/devnet/test-usdc.ts';
import { createNonceManager } from '../src/chains/nonces.ts';
import { createLocalFacilitator, paysExactly, transferWithAuthorizationData } from '../src/payments/local-facilitator.ts';
import { wrapFetchWithPayment, decodePaymentResponseHeader } from '@x402/fetch';
import { x402Client } from '@x402/core/client';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { Receipt } from 'mppx';
import { Types } from 'mppx/evm';
import { Mppx } from 'mppx/server';
import { gatewayMppCharge, mppCharge } from '../src/payments/mpp-server.ts';
import type { PaymentSettings } from '../src/payments/settings.ts';
import { TEST_USDC } from '../src/chains/devnet/test-usdc.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { devnetMppx } from './helpers/mpp-payer.ts';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { startRpcProxy, type RpcProxy } from './helpers/rpc-proxy.ts';

/**
 * The in-process facilitator's settlements (issue 18, paid calls): concurrent
 * paid calls from different payers are settled from the facilitator's one
 * account with nonces counted in the process (no nonce read per settlement,
 * no "nonce too low"), each payment is verified on chain once (x402, and MPP,
 * whose server validates twice), and every call's receipt names a mined
 * transaction that is also on its payment row. The gateway reaches anvil
 * through a JSON-RPC proxy that counts the calls it forwards.
 */

let chain: TestChain;
let gw: TestGateway;
let usdc: Address;
let proxy: RpcProxy;
/** The proxy's URL: what goes through it is counted. */
let rpc: string;
const NETWORK = 'eip155:31337';

beforeAll(async () => {
  chain = await startTestChain(31337);
  proxy = await startRpcProxy(chain.url);
  rpc = proxy.url;
  gw = await startTestGateway({ env: { FLOWGATE_DEVNET: 'auto', FLOWGATE_RPC_URL_31337: rpc, FLOWGATE_RATE_LIMITS: 'off' } });
  usdc = gw.gateway.services.devnet!.usdcAddress;
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await proxy?.close();
  await chain?.stop();
});

const url = `/api/mcp/workflows/microtip/call`;
const post = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' };

async function fundedPayer(): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(generatePrivateKey());
  await gw.gateway.services.devnet!.fund(account.address, { usdc: '1' });
  return account;
}

/** One paid call; answers the executionId and the settlement transaction its receipt names. */
async function payX402(account: PrivateKeyAccount): Promise<{ executionId: string; hash: Hex }> {
  const client = new x402Client().register('eip155:*', new ExactEvmScheme(account));
  client.setSpendControls({ allowedAssets: [{ network: NETWORK, asset: usdc, maxAmountPerPayment: '10000000' }] });
  const res = await wrapFetchWithPayment(fetch, client)(gw.url + url, post);
  const body = (await res.json()) as { executionId: string; paymentReplay?: boolean };
  expect(res.status, JSON.stringify(body)).toBe(200);
  expect(body.paymentReplay).toBeUndefined();
  return { executionId: body.executionId, hash: decodePaymentResponseHeader(res.headers.get('payment-response')!).transaction as Hex };
}

async function payMpp(account: PrivateKeyAccount): Promise<{ executionId: string; hash: Hex }> {
  const mppx = devnetMppx(account, usdc);
  const res = await mppx.fetch(gw.url + url, post);
  const body = (await res.json()) as { executionId: string; paymentReplay?: boolean };
  expect(res.status, JSON.stringify(body)).toBe(200);
  expect(body.paymentReplay).toBeUndefined();
  return { executionId: body.executionId, hash: Receipt.deserialize(res.headers.get('payment-receipt')!).reference as Hex };
}

const count = (method: string) => proxy.count(method);

describe('settling concurrent paid calls from the in-process facilitator', () => {
  it('pipelines them with consecutive nonces, verifies each payment on chain once, and every receipt names a mined transaction on its payment row', async () => {
    // Warm: the token's metadata, the facilitator's first nonce read and the asset check happen once per process.
    await payX402(await fundedPayer());

    const x402Payers = await Promise.all(Array.from({ length: 6 }, fundedPayer));
    const mppPayers = await Promise.all(Array.from({ length: 4 }, fundedPayer));
    const before = {
      count: count('eth_getTransactionCount'),
      call: count('eth_call'),
      code: count('eth_getCode'),
      send: proxy.broadcasts(),
      receipt: count('eth_getTransactionReceipt'),
    };
    const paid = await Promise.all([...x402Payers.map(payX402), ...mppPayers.map(payMpp)]);

    // No settlement read the facilitator's nonce from the node: they were counted in the process.
    expect(count('eth_getTransactionCount') - before.count).toBe(0);
    // One transaction per payment (no nonce collision retried), one on-chain simulation per payment (verify once).
    expect(proxy.broadcasts() - before.send).toBe(paid.length);
    // The devnet mines on arrival: each broadcast was answered with its receipt, none was read again.
    expect(count('eth_getTransactionReceipt') - before.receipt).toBe(0);
    expect(count('eth_call') - before.call).toBe(paid.length);
    // One read of the payer's code per payment (an EOA's payment is accepted on the token's word: one read, one simulation).
    expect(count('eth_getCode') - before.code).toBe(paid.length);

    const facilitator = gw.gateway.services.payments.facilitatorAddress!;
    const txs = await Promise.all(paid.map(({ hash }) => chain.publicClient.getTransaction({ hash })));
    const receipts = await Promise.all(paid.map(({ hash }) => chain.publicClient.getTransactionReceipt({ hash })));
    for (const tx of txs) expect(tx.from.toLowerCase()).toBe(facilitator.toLowerCase());
    for (const receipt of receipts) expect(receipt.status).toBe('success');
    const nonces = txs.map((t) => t.nonce).sort((a, b) => a - b);
    expect(nonces).toEqual(Array.from({ length: paid.length }, (_, i) => nonces[0]! + i));

    const rows = await gw.gateway.services.store
      .selectFrom('payments')
      .select(['execution_id', 'transaction_hash', 'status'])
      .where(
        'execution_id',
        'in',
        paid.map((p) => p.executionId),
      )
      .execute();
    expect(rows).toHaveLength(paid.length);
    for (const { executionId, hash } of paid) {
      expect(rows.find((r) => r.execution_id === executionId)).toMatchObject({ status: 'settled', transaction_hash: hash });
    }
  });
});

describe('a payment spent elsewhere between verification and settlement', () => {
  it('fails its settlement (nothing counted as paid), and the next payment settles', async () => {
    const { facilitator, requirements, signed } = await directFacilitator();

    // A first payment settles (and the facilitator learns the transfer's gas limit).
    const first = await signed(await fundedPayer());
    expect(await facilitator.verify(first.payload, requirements as never)).toMatchObject({ isValid: true });
    expect(await facilitator.settle(first.payload, requirements as never)).toMatchObject({ success: true });

    // The second is verified, then someone submits the same authorization on chain before the facilitator settles it.
    const payer = await fundedPayer();
    const second = await signed(payer);
    expect(await facilitator.verify(second.payload, requirements as never)).toMatchObject({ isValid: true });
    const { v, r, s } = parseSignature(second.signature);
    const a = second.authorization;
    const frontRun = await chain.walletClient(3).writeContract({
      address: usdc,
      abi: testUsdcAbi,
      functionName: 'transferWithAuthorization',
      args: [a.from, a.to, 10000n, BigInt(a.validAfter), BigInt(a.validBefore), a.nonce, Number(v), r, s],
      chain: chain.chain,
      account: chain.account(3),
    } as never);
    await chain.publicClient.waitForTransactionReceipt({ hash: frontRun });
    const settled = await facilitator.settle(second.payload, requirements as never);
    // Its gas limit was known, so it went out and was mined as a revert: a failed settlement, never a success.
    expect(settled).toMatchObject({ success: false, errorReason: 'transaction_reverted' });
    expect((await chain.publicClient.getTransactionReceipt({ hash: settled.transaction as Hex })).status).toBe('reverted');

    // The facilitator is not stuck: the next payment settles and its transfer is mined.
    const third = await signed(await fundedPayer());
    const ok = await facilitator.settle(third.payload, requirements as never);
    expect(ok).toMatchObject({ success: true });
    expect((await chain.publicClient.getTransactionReceipt({ hash: ok.transaction as Hex })).status).toBe('success');
  });
});

describe('a settlement the node holds unmined although it is first in line', () => {
  it('is replaced with higher fees and settles, where it used to wait three minutes and fail', async () => {
    const { facilitatorAccount, facilitator, requirements, signed } = await directFacilitator({ stuckAfterMs: 300 });
    const address = facilitatorAccount.address;
    const first = await signed(await fundedPayer());
    expect(await facilitator.settle(first.payload, requirements as never)).toMatchObject({ success: true });
    const next = await chain.publicClient.getTransactionCount({ address });

    // anvil's pool files a send as waiting on the nonce before it when that one is not yet counted, and never
    // promotes it once it is: made here by putting the account's count one back while the settlement arrives.
    const payment = await signed(await fundedPayer());
    await chain.testClient.setNonce({ address, nonce: next - 1 });
    const settling = facilitator.settle(payment.payload, requirements as never);
    const queued = async () => {
      const pool = (await chain.testClient.request({ method: 'txpool_content' } as never)) as { queued: Record<string, Record<string, { hash: Hex }>> };
      return Object.entries(pool.queued).find(([from]) => from.toLowerCase() === address.toLowerCase())?.[1][String(next)]?.hash;
    };
    let stuck: Hex | undefined;
    for (let tries = 0; !stuck && tries < 200; tries++) {
      stuck = await queued();
      if (!stuck) await new Promise((r) => setTimeout(r, 10));
    }
    expect(stuck).toBeDefined();
    await chain.testClient.setNonce({ address, nonce: next });
    // Still held after the count is right again: the same bytes sent again do not move it.
    await new Promise((r) => setTimeout(r, 100));
    expect(await queued()).toBe(stuck);

    const settled = await settling;
    expect(settled).toMatchObject({ success: true });
    // A replacement for the same nonce was mined, paying the payee; the stuck bytes never will be.
    expect(settled!.transaction).not.toBe(stuck);
    const receipt = await chain.publicClient.getTransactionReceipt({ hash: settled!.transaction as Hex });
    expect(receipt.status).toBe('success');
    expect((await chain.publicClient.getTransaction({ hash: settled!.transaction as Hex })).nonce).toBe(next);
    expect(paysExactly(receipt.logs, usdc, payment.authorization.from, requirements.payTo, 10000n)).toBe(true);
    expect(await chain.publicClient.getTransactionCount({ address })).toBe(next + 1);

    // The facilitator's line moves on: the next payment settles at the next nonce.
    const after = await facilitator.settle((await signed(await fundedPayer())).payload, requirements as never);
    expect(after).toMatchObject({ success: true });
    expect((await chain.publicClient.getTransaction({ hash: after.transaction as Hex })).nonce).toBe(next + 1);

    // Nothing still waits for the replaced bytes (they can never be mined): the node is not polled for them.
    await new Promise((r) => setTimeout(r, 300));
    const reads = () => count('eth_getTransactionReceipt') + count('eth_blockNumber');
    const before = reads();
    await new Promise((r) => setTimeout(r, 500));
    expect(reads()).toBe(before);
  }, 60_000);
});

/**
 * A facilitator of its own on the test chain (its gas funded), an offer to a fresh payee, and
 * EIP-3009 payments for that offer, signed as a payer signs them or changed to be wrong one way.
 */
async function directFacilitator(options: Parameters<typeof createLocalFacilitator>[5] = {}) {
  const facilitatorAccount = privateKeyToAccount(generatePrivateKey());
  await chain.setBalance(facilitatorAccount.address, '1');
  const facilitator = createLocalFacilitator(facilitatorAccount, chain.chain, rpc, NETWORK, createNonceManager(), options);
  const payTo = privateKeyToAccount(generatePrivateKey()).address;
  const requirements = {
    scheme: 'exact',
    network: NETWORK,
    asset: usdc,
    amount: '10000',
    payTo,
    maxTimeoutSeconds: 300,
    extra: { name: TEST_USDC.name, version: TEST_USDC.version },
  } as const;
  type Change = { value?: string; to?: Address; validAfter?: number; validBefore?: number; signer?: PrivateKeyAccount; network?: string };
  const signed = async (payer: PrivateKeyAccount, change: Change = {}) => {
    const now = Math.floor(Date.now() / 1000);
    const authorization = {
      from: payer.address,
      to: change.to ?? payTo,
      value: change.value ?? '10000',
      validAfter: String(change.validAfter ?? now - 60),
      validBefore: String(change.validBefore ?? now + 300),
      nonce: toHex(crypto.getRandomValues(new Uint8Array(32))),
    };
    const signature = await (change.signer ?? payer).signTypedData({
      domain: { name: TEST_USDC.name, version: TEST_USDC.version, chainId: 31337, verifyingContract: usdc },
      types: authorizationTypes,
      primaryType: 'TransferWithAuthorization',
      message: {
        ...authorization,
        value: BigInt(authorization.value),
        validAfter: BigInt(authorization.validAfter),
        validBefore: BigInt(authorization.validBefore),
      },
    });
    const payload = {
      x402Version: 2,
      accepted: { ...requirements, network: change.network ?? NETWORK },
      payload: { authorization, signature },
    } as never as PaymentPayload;
    return { authorization, signature, payload };
  };
  return { facilitatorAccount, facilitator, requirements, signed };
}

describe("verifying an EOA's payment on the token's word", () => {
  it("answers every payment as x402's own verification does: good ones, and each way one can be wrong", async () => {
    const { facilitatorAccount, facilitator, requirements, signed } = await directFacilitator();
    const payment = async (...args: Parameters<typeof signed>) => (await signed(...args)).payload;
    // The reference: x402's facilitator scheme as the library ships it, reading the same chain.
    const reference = new x402Facilitator().register(
      NETWORK,
      new ExactEvmFacilitatorScheme(
        toFacilitatorEvmSigner({ ...createPublicClient({ chain: chain.chain, transport: viemHttp(rpc) }), address: facilitatorAccount.address } as never),
      ),
    );
    const now = Math.floor(Date.now() / 1000);
    const payer = await fundedPayer();
    const spent = await payment(payer);
    expect(await facilitator.settle(spent, requirements as never)).toMatchObject({ success: true });
    const smartWallet = await fundedPayer();
    await chain.testClient.setCode({ address: smartWallet.address, bytecode: '0x6080604052600080fd' });
    const cases: Record<string, PaymentPayload> = {
      good: await payment(payer),
      'another good one': await payment(await fundedPayer()),
      'signed by someone else': await payment(payer, { signer: privateKeyToAccount(generatePrivateKey()) }),
      'one unit short': await payment(payer, { value: '9999' }),
      'paid to someone else': await payment(payer, { to: privateKeyToAccount(generatePrivateKey()).address }),
      expired: await payment(payer, { validBefore: now - 1 }),
      'expiring within 6 s': await payment(payer, { validBefore: now + 3 }),
      'not valid yet': await payment(payer, { validAfter: now + 600 }),
      'from a payer with no USDC': await payment(privateKeyToAccount(generatePrivateKey())),
      'already settled': spent,
      'for another network': await payment(payer, { network: 'eip155:8453' }),
      'from a smart wallet': await payment(smartWallet),
    };
    const answers: Record<string, [boolean, string | null]> = {};
    const expected: Record<string, [boolean, string | null]> = {};
    const reads: Record<string, number> = {};
    const readsByX402: Record<string, number> = {};
    const chainReads = () => count('eth_call') + count('eth_getCode');
    // Reads started and never awaited count too: each side's are counted once the node has had time to see them.
    const settled = () => new Promise((resolve) => setTimeout(resolve, 100));
    for (const [name, p] of Object.entries(cases)) {
      let before = chainReads();
      const ours = await facilitator.verify(p, requirements as never);
      await settled();
      reads[name] = chainReads() - before;
      before = chainReads();
      const theirs = await reference.verify(p, requirements as never);
      await settled();
      readsByX402[name] = chainReads() - before;
      answers[name] = [ours.isValid, ours.invalidReason ?? null];
      expected[name] = [theirs.isValid, theirs.invalidReason ?? null];
    }
    expect(answers).toEqual(expected);
    // No payment costs more reads of the chain than x402's own verification of it: a refusal reuses the simulation and
    // code read. But one: a payer with code is judged by ERC-1271, so the EOA simulation started ahead goes unused.
    for (const name of Object.keys(cases)) {
      expect(reads[name], name).toBeLessThanOrEqual(readsByX402[name]! + (name === 'from a smart wallet' ? 1 : 0));
    }
    expect(
      Object.entries(answers)
        .filter(([, [ok]]) => ok)
        .map(([name]) => name),
    ).toEqual(['good', 'another good one']);
    // A missing EIP-712 domain in the offer is refused too, as x402 refuses it.
    const bare = { ...requirements, extra: {} } as never;
    const good = await payment(payer);
    expect(await facilitator.verify(good, bare)).toEqual(await reference.verify(good, bare));
    expect((await facilitator.verify(good, bare)).isValid).toBe(false);
  });
});

describe("the settlement's calldata and its receipt check", () => {
  it("encodes both transferWithAuthorization overloads exactly as viem, and counts a receipt only with the payer's exact Transfer to the payee", async () => {
    const { facilitator, requirements, signed } = await directFacilitator();
    const payer = await fundedPayer();
    const { authorization, signature, payload } = await signed(payer);
    const { v, r, s } = parseSignature(signature);
    const leading = [
      authorization.from,
      authorization.to,
      BigInt(authorization.value),
      BigInt(authorization.validAfter),
      BigInt(authorization.validBefore),
      authorization.nonce,
    ] as const;
    for (const args of [[...leading, Number(v), r, s] as const, [...leading, signature] as const]) {
      expect(transferWithAuthorizationData(args)).toBe(encodeFunctionData({ abi: eip3009ABI, functionName: 'transferWithAuthorization', args }));
    }

    const settled = await facilitator.settle(payload, requirements as never);
    expect(settled).toMatchObject({ success: true });
    const { logs } = await chain.publicClient.getTransactionReceipt({ hash: settled.transaction as Hex });
    const value = BigInt(authorization.value);
    expect(paysExactly(logs, usdc, authorization.from, authorization.to, value)).toBe(true);
    const someoneElse = privateKeyToAccount(generatePrivateKey()).address;
    expect(paysExactly(logs, usdc, authorization.from, authorization.to, value + 1n)).toBe(false);
    expect(paysExactly(logs, usdc, authorization.from, authorization.to, value - 1n)).toBe(false);
    expect(paysExactly(logs, usdc, someoneElse, authorization.to, value)).toBe(false);
    expect(paysExactly(logs, usdc, authorization.from, someoneElse, value)).toBe(false);
    // The same Transfer from another contract (a token of its own that says it paid) does not count.
    expect(paysExactly(logs, someoneElse, authorization.from, authorization.to, value)).toBe(false);
    const transfer = logs.find((log) => log.topics[0] === keccak256(toHex('Transfer(address,address,uint256)')))!;
    const changed = (change: Partial<typeof transfer>) => [{ ...transfer, ...change }];
    expect(paysExactly(changed({}), usdc, authorization.from, authorization.to, value)).toBe(true);
    // Another event with the same indexed addresses (an Approval's topic), or an amount that is not one word, does not count.
    expect(
      paysExactly(
        changed({ topics: [keccak256(toHex('Approval(address,address,uint256)')), ...transfer.topics.slice(1)] as never }),
        usdc,
        authorization.from,
        authorization.to,
        value,
      ),
    ).toBe(false);
    expect(paysExactly(changed({ data: `${transfer.data}00` }), usdc, authorization.from, authorization.to, value)).toBe(false);
  });
});

describe("validating an MPP credential on the facilitator's word", () => {
  it("answers every credential as mppx's own validation does (with x402's verification behind it): good ones, and each way one can be wrong", async () => {
    const { facilitatorAccount, facilitator, requirements } = await directFacilitator();
    const token = { address: usdc, name: TEST_USDC.name, version: TEST_USDC.version, decimals: 6 };
    const settings = { chainId: 31337 } as PaymentSettings;
    const payTo = requirements.payTo;
    const inProcess = { ...facilitator, keepsVerifications: true };
    // The reference: mppx's charge as it ships, asking x402's own facilitator verification.
    const x402Reference = new x402Facilitator().register(
      NETWORK,
      new ExactEvmFacilitatorScheme(
        toFacilitatorEvmSigner({ ...createPublicClient({ chain: chain.chain, transport: viemHttp(rpc) }), address: facilitatorAccount.address } as never),
      ),
    );
    const reference = mppCharge(settings, x402Reference as never, token, payTo);
    const mpp = Mppx.create({
      realm: 'test',
      secretKey: 'a test secret of at least thirty-two bytes',
      methods: [mppCharge(settings, inProcess, token, payTo)],
    });
    type Challenge = { request: { amount: string; currency: Address } };
    const newChallenge = async () => (await mpp.challenge.evm.charge({ amount: '0.01', description: 'test', scope: 'microtip' })) as never as Challenge;
    const shared = await newChallenge();
    const now = Math.floor(Date.now() / 1000);
    type Change = { value?: string; to?: Address; nonce?: Hex; validAfter?: number; validBefore?: number; signer?: PrivateKeyAccount; source?: string };
    // One challenge for all but the spent payment: its hash is the authorization's nonce, one per payer and challenge.
    const credential = async (payer: PrivateKeyAccount, change: Change = {}, challenge: Challenge = shared) => {
      const message = {
        from: payer.address,
        nonce: change.nonce ?? Types.challengeHash(challenge as never),
        to: change.to ?? payTo,
        validAfter: BigInt(change.validAfter ?? 0),
        validBefore: BigInt(change.validBefore ?? now + 300),
        value: BigInt(change.value ?? challenge.request.amount),
      };
      const signature = await (change.signer ?? payer).signTypedData({
        domain: Types.authorizationDomain({ authorization: { name: TEST_USDC.name, version: TEST_USDC.version }, chainId: 31337, currency: usdc }),
        message,
        primaryType: 'TransferWithAuthorization',
        types: Types.authorizationTypes,
      });
      const payload = {
        ...message,
        validAfter: String(message.validAfter),
        validBefore: String(message.validBefore),
        value: String(message.value),
        signature,
        type: 'authorization',
      };
      return { challenge, payload, source: change.source ?? Types.toSource({ address: payer.address, chainId: 31337 }) };
    };
    const payer = await fundedPayer();
    const spent = await credential(payer, {}, await newChallenge());
    const first = gatewayMppCharge(settings, inProcess, token, payTo);
    await first.validate!({ credential: spent } as never);
    await first.broadcast!({ credential: spent } as never);
    const smartWallet = await fundedPayer();
    await chain.testClient.setCode({ address: smartWallet.address, bytecode: '0x6080604052600080fd' });
    const someone = privateKeyToAccount(generatePrivateKey());
    const cases = {
      good: await credential(payer),
      'another good one': await credential(await fundedPayer()),
      'signed by someone else': await credential(payer, { signer: someone }),
      'one unit short': await credential(payer, { value: String(BigInt(shared.request.amount) - 1n) }),
      'paid to someone else': await credential(payer, { to: someone.address }),
      "a nonce that is not the challenge's hash": await credential(payer, { nonce: toHex(crypto.getRandomValues(new Uint8Array(32))) }),
      expired: await credential(payer, { validBefore: now - 1 }),
      'not valid yet': await credential(payer, { validAfter: now + 600 }),
      "another payer's source": await credential(payer, { source: Types.toSource({ address: someone.address, chainId: 31337 }) }),
      'from a payer with no USDC': await credential(someone),
      'already settled': spent,
      'from a smart wallet': await credential(smartWallet),
    };
    const outcome = (validation: Promise<unknown>) =>
      validation.then(
        (answer) => ['accepted', answer] as const,
        (error: Error) => ['refused', error.message] as const,
      );
    const ours = gatewayMppCharge(settings, inProcess, token, payTo);
    type Outcome = Awaited<ReturnType<typeof outcome>>;
    const answers: Record<string, Outcome> = {};
    const expected: Record<string, Outcome> = {};
    for (const [name, c] of Object.entries(cases)) {
      answers[name] = await outcome(ours.validate!({ credential: c } as never));
      expected[name] = await outcome(reference.validate!({ credential: c } as never));
    }
    expect(answers).toEqual(expected);
    expect(
      Object.entries(answers)
        .filter(([, [verdict]]) => verdict === 'accepted')
        .map(([name]) => name),
    ).toEqual(['good', 'another good one']);
  });
});
