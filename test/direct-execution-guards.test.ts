import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { keccak256, parseEther, type Address } from 'viem';
import { requestHash } from '../src/text/request-hash.ts';
import { reserveIdempotencyKey } from '../src/guards/idempotency.ts';
import { insertPending, storeSigned } from '../src/execute/records.ts';
import { organizationAccount } from '../src/wallets/signer.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { randomAddress } from './helpers/web3.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { compileContract } from './helpers/solidity.ts';

/**
 * The guards every write path shares: idempotency (SPEC's state table), the
 * daily cap under concurrency, scopes, rate limits, and receipts that fail
 * closed. Real anvil nodes; one of them never mines unless told to.
 */

const recipient = randomAddress;

async function post(gw: TestGateway, path: string, body: unknown, init: { key?: string; idempotencyKey?: string; raw?: string } = {}) {
  const headers: Record<string, string> = {};
  if (init.idempotencyKey) headers['idempotency-key'] = init.idempotencyKey;
  return fetchJson(`${gw.url}${path}`, { method: 'POST', body: init.raw ?? JSON.stringify(body), key: init.key ?? gw.ownerKey, headers });
}

async function orgWallet(gw: TestGateway): Promise<Address> {
  const org = await gw.gateway.services.organizations.ensure('default');
  return (await gw.gateway.services.organizations.wallet(org.organization.id))!.walletAddress as Address;
}

describe('on an automining chain', () => {
  let chain: TestChain;
  let gw: TestGateway;
  let wallet: Address;

  beforeAll(async () => {
    chain = await startTestChain(31337);
    gw = await startTestGateway({ env: { FLOWGATE_DEVNET: 'auto', FLOWGATE_RPC_URL_31337: chain.url, FLOWGATE_RATE_LIMIT_EXECUTE_PER_KEY: '55' } });
    wallet = await orgWallet(gw);
  });
  afterAll(async () => {
    await gw?.close();
    await chain?.stop();
  });

  describe('idempotency', () => {
    test('same key and same body replays the original response with idempotentReplay, formatting ignored', async () => {
      const to = recipient();
      const first = await post(gw, '/api/execute/transfer', { chainId: 31337, recipientAddress: to, amount: '0.001' }, { idempotencyKey: 'k-replay' });
      expect(first.status).toBe(202);
      expect(first.body.idempotentReplay).toBeUndefined();
      // Same values, different key order and whitespace.
      const raw = `{ "amount" : "0.001",\n "recipientAddress": "${to}", "chainId": 31337 }`;
      const again = await post(gw, '/api/execute/transfer', undefined, { idempotencyKey: 'k-replay', raw });
      expect(again.status).toBe(202);
      expect(again.body).toMatchObject({
        executionId: first.body.executionId,
        status: 'completed',
        idempotentReplay: true,
        transactionHash: first.body.transactionHash,
      });
      expect(await chain.publicClient.getBalance({ address: to })).toBe(parseEther('0.001'));
      // Shared by every key of the organization.
      const otherKey = await gw.createKey({ name: 'second' });
      const byOther = await post(
        gw,
        '/api/execute/transfer',
        { chainId: 31337, recipientAddress: to, amount: '0.001' },
        { idempotencyKey: 'k-replay', key: otherKey },
      );
      expect(byOther.body.executionId).toBe(first.body.executionId);
    });

    test('same key with a different value is 409 idempotency_conflict naming the original execution', async () => {
      const to = recipient();
      const first = await post(gw, '/api/execute/transfer', { chainId: 31337, recipientAddress: to, amount: '0.001' }, { idempotencyKey: 'k-conflict' });
      const second = await post(gw, '/api/execute/transfer', { chainId: 31337, recipientAddress: to, amount: '0.0010' }, { idempotencyKey: 'k-conflict' });
      expect(second.status).toBe(409);
      expect(second.body).toMatchObject({ code: 'idempotency_conflict', retryable: false, originalExecutionId: first.body.executionId });
      const viaNetwork = await post(gw, '/api/execute/transfer', { network: 31337, recipientAddress: to, amount: '0.001' }, { idempotencyKey: 'k-conflict' });
      expect(viaNetwork.status).toBe(409);
    });

    test('scope is per endpoint and per organization', async () => {
      const to = recipient();
      const first = await post(gw, '/api/execute/transfer', { chainId: 31337, recipientAddress: to, amount: '0.001' }, { idempotencyKey: 'k-scope' });
      const otherEndpoint = await post(
        gw,
        '/api/execute/contract-call',
        {
          chainId: 31337,
          contractAddress: to,
          functionName: 'x',
          abi: '[{"type":"function","name":"x","inputs":[],"outputs":[],"stateMutability":"nonpayable"}]',
        },
        { idempotencyKey: 'k-scope' },
      );
      expect(otherEndpoint.body.idempotentReplay).toBeUndefined();
      expect(otherEndpoint.body.code).not.toBe('idempotency_conflict');
      const otherOrgKey = await gw.createKey({ org: 'other-org' });
      const other = await gw.gateway.services.organizations.ensure('other-org');
      await gw.gateway.services.devnet!.fund((await gw.gateway.services.organizations.wallet(other.organization.id))!.walletAddress, { eth: '1' });
      const otherOrg = await post(
        gw,
        '/api/execute/transfer',
        { chainId: 31337, recipientAddress: to, amount: '0.001', simulate: true },
        { idempotencyKey: 'k-scope', key: otherOrgKey },
      );
      expect(otherOrg.status).toBe(200);
      expect(first.status).toBe(202);
    });

    test('50 concurrent identical requests broadcast exactly once', async () => {
      const to = recipient();
      const nonceBefore = await chain.publicClient.getTransactionCount({ address: wallet });
      const key = await gw.createKey({ name: 'burst' });
      const results = await Promise.all(
        Array.from({ length: 50 }, () =>
          post(gw, '/api/execute/transfer', { chainId: 31337, recipientAddress: to, amount: '0.0007' }, { idempotencyKey: 'k-burst', key }),
        ),
      );
      const statuses = results.map((r) => r.status);
      expect(statuses.every((s) => s === 202 || s === 409)).toBe(true);
      const executed = new Set(results.filter((r) => r.status === 202).map((r) => r.body.executionId));
      expect(executed.size).toBe(1);
      for (const r of results.filter((r) => r.status === 409)) expect(r.body).toMatchObject({ code: 'idempotency_in_progress', retryable: true });
      expect(await chain.publicClient.getTransactionCount({ address: wallet })).toBe(nonceBefore + 1);
      expect(await chain.publicClient.getBalance({ address: to })).toBe(parseEther('0.0007'));
      const after = await post(gw, '/api/execute/transfer', { chainId: 31337, recipientAddress: to, amount: '0.0007' }, { idempotencyKey: 'k-burst' });
      expect(after.body).toMatchObject({ executionId: [...executed][0], idempotentReplay: true });
    });

    test('a pre-broadcast rejection releases the key; a simulation reserves nothing', async () => {
      const to = recipient();
      const key = await gw.createKey({ name: 'release' });
      const sim = await post(
        gw,
        '/api/execute/transfer',
        { chainId: 31337, recipientAddress: to, amount: '0.001', simulate: true },
        { idempotencyKey: 'k-release', key },
      );
      expect(sim.status).toBe(200);
      const invalid = await post(gw, '/api/execute/transfer', { chainId: 31337, recipientAddress: to, amount: '-1' }, { idempotencyKey: 'k-release', key });
      expect(invalid.status).toBe(400);
      const real = await post(gw, '/api/execute/transfer', { chainId: 31337, recipientAddress: to, amount: '0.001' }, { idempotencyKey: 'k-release', key });
      expect(real.status).toBe(202);
      expect(real.body.idempotentReplay).toBeUndefined();
      expect(real.body.status).toBe('completed');
    });
  });

  describe('recovery after the gateway died mid-request', () => {
    const staleRecord = async (key: string, body: unknown, executionId: string | null) => {
      const org = await gw.gateway.services.organizations.ensure('default');
      await gw.gateway.services.store
        .insertInto('idempotency_records')
        .values({
          organization_id: org.organization.id,
          endpoint: 'transfer',
          key,
          request_hash: requestHash(body),
          state: 'in_progress',
          execution_id: executionId,
          response_status: null,
          response_body: null,
          created_at: new Date(Date.now() - 3600_000).toISOString(),
          expires_at: new Date(Date.now() + 3600_000).toISOString(),
        })
        .execute();
      return org.organization.id;
    };

    test('a retry re-sends the stored signed bytes instead of signing again: the recipient is paid once', async () => {
      const { services } = gw.gateway;
      const to = recipient();
      const body = { chainId: 31337, recipientAddress: to, amount: '0.0042' };
      const org = await services.organizations.ensure('default');
      // What a crashed request leaves behind: the row, the signed bytes and hash, never broadcast.
      const account = await organizationAccount(services.store, services.secrets, org.organization.id);
      const fees = await chain.publicClient.estimateFeesPerGas();
      const raw = await account.signTransaction({
        type: 'eip1559',
        chainId: 31337,
        nonce: await chain.publicClient.getTransactionCount({ address: wallet, blockTag: 'pending' }),
        gas: 42_000n,
        maxFeePerGas: fees.maxFeePerGas,
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
        to,
        value: parseEther('0.0042'),
      });
      const id = 'crashedexecution00001';
      await insertPending(services.store, {
        id,
        organizationId: org.organization.id,
        apiKeyId: null,
        type: 'transfer',
        chainId: 31337,
        from: wallet,
        to,
        valueWei: parseEther('0.0042'),
      });
      await storeSigned(services.store, id, keccak256(raw), raw);
      await staleRecord('k-crash', body, id);

      const retry = await post(gw, '/api/execute/transfer', body, { idempotencyKey: 'k-crash' });
      expect(retry.status).toBe(202);
      expect(retry.body).toMatchObject({ executionId: id, status: 'completed', transactionHash: keccak256(raw), idempotentReplay: true });
      expect(await chain.publicClient.getBalance({ address: to })).toBe(parseEther('0.0042'));
      const again = await post(gw, '/api/execute/transfer', body, { idempotencyKey: 'k-crash' });
      expect(again.body).toMatchObject({ executionId: id, idempotentReplay: true });
      expect(await chain.publicClient.getBalance({ address: to })).toBe(parseEther('0.0042'));
    });

    test('a request still alive when a retry took its key over sends nothing: its last step before the broadcast finds the key gone', async () => {
      const { store, organizations } = gw.gateway.services;
      const scope = { organizationId: (await organizations.ensure('default')).organization.id, endpoint: 'transfer', key: 'k-slow' };
      const body = { chainId: 31337, recipientAddress: recipient(), amount: '0.001' };
      const slow = await reserveIdempotencyKey(store, scope, body);
      expect(slow.kind).toBe('fresh');
      // The slow request looks dead to a retry (any age here, even within the same millisecond; in production the receipt timeout plus 2 minutes).
      const retry = await reserveIdempotencyKey(store, scope, body, -1);
      expect(retry.kind).toBe('stale');
      if (slow.kind === 'replay' || retry.kind === 'replay') throw new Error('unexpected replay');
      // Before: the slow request's attach succeeded, and it broadcast as well as the retry.
      await expect(slow.attach('slow-execution')).rejects.toMatchObject({ status: 409, code: 'idempotency_in_progress' });
      // Its cleanup cannot remove the retry's record either.
      await slow.release();
      await retry.attach('retry-execution');
      const row = await store.selectFrom('idempotency_records').selectAll().where('key', '=', 'k-slow').executeTakeFirstOrThrow();
      expect(row).toMatchObject({ state: 'in_progress', execution_id: 'retry-execution' });
    });

    test('a request that died before signing runs afresh on retry', async () => {
      const to = recipient();
      const body = { chainId: 31337, recipientAddress: to, amount: '0.0011' };
      await staleRecord('k-crash-unsigned', body, null);
      const retry = await post(gw, '/api/execute/transfer', body, { idempotencyKey: 'k-crash-unsigned' });
      expect(retry.status).toBe(202);
      expect(retry.body.status).toBe('completed');
      expect(retry.body.idempotentReplay).toBeUndefined();
      expect(await chain.publicClient.getBalance({ address: to })).toBe(parseEther('0.0011'));
    });
  });

  describe('scopes', () => {
    test('mcp:read may simulate and read status but gets 403 insufficient_scope on broadcast', async () => {
      const readKey = await gw.createKey({ scope: 'mcp:read' });
      const to = recipient();
      const sim = await post(gw, '/api/execute/transfer', { chainId: 31337, recipientAddress: to, amount: '0.001', simulate: true }, { key: readKey });
      expect(sim.status).toBe(200);
      const send = await post(gw, '/api/execute/transfer', { chainId: 31337, recipientAddress: to, amount: '0.001' }, { key: readKey });
      expect(send.status).toBe(403);
      expect(send.body.code).toBe('insufficient_scope');
      expect(await chain.publicClient.getBalance({ address: to })).toBe(0n);
      const writeKey = await gw.createKey({ scope: 'mcp:write' });
      const sent = await post(gw, '/api/execute/transfer', { chainId: 31337, recipientAddress: to, amount: '0.001' }, { key: writeKey });
      expect(sent.status).toBe(202);
      const status = await fetchJson(`${gw.url}/api/execute/${sent.body.executionId}/status`, { key: readKey });
      expect(status.body.status).toBe('completed');
      const anonymous = await fetchJson(`${gw.url}/api/execute/transfer`, { method: 'POST', body: '{}' });
      expect(anonymous.status).toBe(401);

      const client = await connectMcp(gw.url, readKey);
      const viaMcp = await callTool(client, 'execute_transfer', { chain_id: '31337', to_address: to, amount: '0.001' });
      expect(viaMcp.isError).toBe(true);
      expect(viaMcp.body.code).toBe('insufficient_scope');
      await client.close();
    });
  });

  describe('rate limits', () => {
    test('every direct-execution response carries X-RateLimit-*, and the limit answers 429 with Retry-After', async () => {
      const key = await gw.createKey({ name: 'rate' });
      let last;
      for (let i = 0; i < 55; i++) {
        last = await fetchJson(`${gw.url}/api/execute/does-not-exist/status`, { key });
        expect(last.status).toBe(404);
        expect(last.headers.get('x-ratelimit-limit')).toBe('55');
        expect(Number(last.headers.get('x-ratelimit-remaining'))).toBe(54 - i);
      }
      const refused = await post(gw, '/api/execute/transfer', { chainId: 31337, recipientAddress: recipient(), amount: '0.001' }, { key });
      expect(refused.status).toBe(429);
      expect(refused.body.code).toBe('rate_limited');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    });
  });

  describe('daily cap', () => {
    test('50 concurrent transfers that together exceed the cap never send more than the cap', async () => {
      const cap = parseEther('0.02');
      const used = BigInt((await fetchJson(`${gw.url}/api/analytics/spend-cap`, { key: gw.ownerKey })).body.dailyUsedWei);
      const keys = await Promise.all([gw.createKey({ name: 'c1' }), gw.createKey({ name: 'c2' })]);
      const targets = Array.from({ length: 50 }, recipient);
      const results = await Promise.all(
        targets.map((to, i) => post(gw, '/api/execute/transfer', { chainId: 31337, recipientAddress: to, amount: '0.0009' }, { key: keys[i % 2] })),
      );
      const ok = results.filter((r) => r.status === 202 && r.body.status === 'completed');
      const refused = results.filter((r) => r.status === 403);
      expect(ok.length + refused.length).toBe(50);
      for (const r of refused) expect(r.body.error).toBe('Daily spending cap exceeded');
      const received = (await Promise.all(targets.map((a) => chain.publicClient.getBalance({ address: a })))).reduce((a, b) => a + b, 0n);
      expect(received).toBe(parseEther('0.0009') * BigInt(ok.length));
      expect(used + received).toBeLessThanOrEqual(cap);
      expect(ok.length).toBe(Number((cap - used) / parseEther('0.0009')));
      const data = (await fetchJson(`${gw.url}/api/analytics/spend-cap`, { key: gw.ownerKey })).body;
      expect(data).toMatchObject({ effectiveDailyCapWei: cap.toString(), usingDefaultDailyCap: true, dailyCapWei: null });
      expect(BigInt(data.dailyUsedWei)).toBe(used + received);
    });
  });
});

/** A counter contract whose `act` reverts once `close` has run: lets a test make a transaction revert at inclusion. */
const compileGate = () =>
  compileContract(
    'Gate',
    'pragma solidity ^0.8.0; contract Gate { bool public open = true; function close() external { open = false; } function act() external { require(open, "gate closed"); } }',
  );

describe('receipts fail closed (a chain that mines only when told)', () => {
  let chain: TestChain;
  let gw: TestGateway;

  beforeAll(async () => {
    chain = await startTestChain(31337);
    gw = await startTestGateway({ env: { FLOWGATE_DEVNET: 'auto', FLOWGATE_RPC_URL_31337: chain.url, FLOWGATE_RECEIPT_TIMEOUT_MS: '2500' } });
    await chain.testClient.setAutomine(false);
  });
  afterAll(async () => {
    await gw?.close();
    await chain?.stop();
  });

  test('a transaction that never confirms ends failed with receiptStatus timeout, hash on record, key held', async () => {
    const to = recipient();
    const res = await post(gw, '/api/execute/transfer', { chainId: 31337, recipientAddress: to, amount: '0.001' }, { idempotencyKey: 'k-timeout' });
    expect(res.status).toBe(202);
    expect(res.body.status).toBe('failed');
    expect(res.body.receipts).toHaveLength(1);
    expect(res.body.receipts[0]).toMatchObject({ verified: false, receiptStatus: 'timeout' });
    expect(res.body.error).toMatch(/not confirmed in time/);
    const replay = await post(gw, '/api/execute/transfer', { chainId: 31337, recipientAddress: to, amount: '0.001' }, { idempotencyKey: 'k-timeout' });
    expect(replay.body).toMatchObject({ executionId: res.body.executionId, idempotentReplay: true });
    await chain.testClient.dropTransaction({ hash: res.body.receipts[0].hash });
  });

  test('a transaction the node forgets ends failed with receiptStatus not_found', async () => {
    const pending = post(gw, '/api/execute/transfer', { chainId: 31337, recipientAddress: recipient(), amount: '0.001' });
    // Wait for the transaction to reach the mempool, then make the node forget it.
    for (let i = 0; i < 50; i++) {
      const pool = (await chain.testClient.request({ method: 'txpool_content' } as any)) as { pending: Record<string, unknown> };
      if (Object.keys(pool.pending).length > 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await chain.testClient.request({ method: 'anvil_dropAllTransactions' } as any);
    const res = await pending;
    expect(res.body.status).toBe('failed');
    expect(res.body.receipts[0], JSON.stringify(res.body)).toMatchObject({ verified: false, receiptStatus: 'not_found' });
  });

  test('a write that reverts at inclusion ends failed with receiptStatus reverted, and the key is released', async () => {
    const gate = compileGate();
    const deployer = chain.walletClient(1);
    const deployHash = await deployer.deployContract({ abi: gate.abi, bytecode: gate.bytecode, account: chain.account(1), chain: chain.chain });
    await chain.testClient.mine({ blocks: 1 });
    const address = (await chain.publicClient.getTransactionReceipt({ hash: deployHash })).contractAddress!;

    const pending = post(
      gw,
      '/api/execute/contract-call',
      { chainId: 31337, contractAddress: address, functionName: 'act', abi: JSON.stringify(gate.abi) },
      { idempotencyKey: 'k-revert' },
    );
    for (let i = 0; i < 50; i++) {
      const pool = (await chain.testClient.request({ method: 'txpool_content' } as any)) as { pending: Record<string, unknown> };
      if (Object.keys(pool.pending).length > 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    // `close` with a higher tip is ordered first in the block, so `act` reverts at inclusion.
    await deployer.writeContract({
      address,
      abi: gate.abi,
      functionName: 'close',
      account: chain.account(1),
      chain: chain.chain,
      maxPriorityFeePerGas: parseEther('0.00001'),
      maxFeePerGas: parseEther('0.0001'),
    });
    await chain.testClient.mine({ blocks: 1 });
    const res = await pending;
    expect(res.status).toBe(202);
    expect(res.body.status).toBe('failed');
    expect(res.body.receipts[0], JSON.stringify(res.body)).toMatchObject({ verified: false, receiptStatus: 'reverted' });
    expect(res.body.error).toMatch(/reverted on chain/);
    expect(res.body.transactionHash).toBeUndefined();
    // Reverted at inclusion releases the key: the same request executes again (and is refused up front now).
    const again = await post(
      gw,
      '/api/execute/contract-call',
      { chainId: 31337, contractAddress: address, functionName: 'act', abi: JSON.stringify(gate.abi) },
      { idempotencyKey: 'k-revert' },
    );
    expect(again.body.idempotentReplay).toBeUndefined();
    expect(again.body.status).toBe('failed');
    expect(again.body.error).toMatch(/gate closed/);
    expect(again.body.receipts).toEqual([]);
  });
});
