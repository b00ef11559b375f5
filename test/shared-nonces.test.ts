import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { createWalletClient, http, parseEther, type Address, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { createSharedNonceManager } from '../src/chains/shared-nonces.ts';
import { signAndBroadcast, verifyTransaction } from '../src/chains/transactions.ts';
import { migrate, openStore, type Store } from '../src/store/db.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { tempDir } from './helpers/gateway.ts';
import { startPostgres, type TestPostgres } from './helpers/postgres.ts';
import { minedTransaction, randomAddress } from './helpers/web3.ts';

/**
 * The PostgreSQL nonce manager (src/chains/shared-nonces.ts) with two
 * instances' managers on one database and one anvil: a send that leaves its
 * nonce unused after another instance has sent a later one must not strand
 * that later transaction until some third send comes along.
 */

let postgres: TestPostgres;
let chain: TestChain;
const stores: Store[] = [];
let client: PublicClient;

beforeAll(async () => {
  postgres = await startPostgres();
  // Nonces from several senders reach anvil out of order; its automine can then leave ready transactions unmined
  // until another arrives (foundry-rs/foundry#10122). A block every second as well mines any such straggler.
  chain = await startTestChain(31337, ['--mixed-mining', '--block-time', '1']);
  client = chain.publicClient as PublicClient;
  const databaseUrl = await postgres.createDatabase('nonces');
  for (let i = 0; i < 2; i++) stores.push(openStore({ dataDir: tempDir(), databaseUrl }).store);
  await migrate(stores[0]!);
}, 120_000);

afterAll(async () => {
  for (const store of stores) await store.destroy();
  await chain?.stop();
  await postgres?.destroy();
});

async function fundedAccount(): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(generatePrivateKey());
  await chain.setBalance(account.address, '10');
  return account;
}

const count = (address: Address, blockTag: 'latest' | 'pending') => client.getTransactionCount({ address, blockTag });
const minedAt = (address: Address, nonce: number) => minedTransaction(client, address, nonce);
const rows = (address: Address) =>
  stores[0]!.selectFrom('chain_nonces').select(['nonce', 'state']).where('address', '=', address.toLowerCase()).orderBy('nonce').execute();

/**
 * Instance A allocates a nonce and is held before its broadcast; instance B then sends the next nonce,
 * which the node queues behind the gap; A's send is then let go to end as `release` makes it.
 */
async function gapBehindLaterSend(account: PrivateKeyAccount, aRequest: { value: bigint; gas?: bigint }, release: 'store fails' | 'broadcast') {
  const [a, b] = stores.map((store) => createSharedNonceManager(store));
  const start = await count(account.address, 'pending');
  let signedA!: () => void;
  const aSigned = new Promise<void>((resolve) => (signedA = resolve));
  let letGo!: () => void;
  const gate = new Promise<void>((resolve) => (letGo = resolve));
  const recipientA = randomAddress();
  const sendA = signAndBroadcast(
    { client, account, nonces: a! },
    { to: recipientA, value: aRequest.value },
    {
      gas: aRequest.gas,
      onSigned: async () => {
        signedA();
        await gate;
        if (release === 'store fails') throw new Error('store write failed');
      },
    },
  );
  const outcomeA = sendA.then(
    ({ hash }) => ({ ok: true as const, hash }),
    (error: Error) => ({ ok: false as const, error }),
  );
  await aSigned;
  const recipientB = randomAddress();
  const { hash: hashB } = await signAndBroadcast({ client, account, nonces: b! }, { to: recipientB, value: parseEther('0.01') }, { onSigned: async () => {} });
  // B's transaction waits in the node's queue behind A's nonce.
  expect(await count(account.address, 'latest')).toBe(start);
  letGo();
  return { start, outcomeA: await outcomeA, hashB, recipientA, recipientB };
}

describe('shared nonces: a nonce given up behind a later send', () => {
  test('a send whose store write fails after another instance sent the next nonce: the gap is filled with a zero-value transfer to itself, and the later transfer is mined', async () => {
    const account = await fundedAccount();
    const { start, outcomeA, hashB, recipientA, recipientB } = await gapBehindLaterSend(account, { value: parseEther('0.02') }, 'store fails');
    expect(outcomeA.ok).toBe(false);
    expect(!outcomeA.ok && outcomeA.error.message).toBe('store write failed');

    const receiptB = await verifyTransaction(client, hashB, 20_000);
    expect(receiptB.receiptStatus).toBe('success');
    expect(await client.getBalance({ address: recipientB })).toBe(parseEther('0.01'));
    // A's transfer never happened; its nonce holds a transaction that moved nothing.
    expect(await client.getBalance({ address: recipientA })).toBe(0n);
    const filler = await minedAt(account.address, start);
    expect(filler).toMatchObject({ to: account.address.toLowerCase(), value: 0n, input: '0x' });
    expect(await count(account.address, 'latest')).toBe(start + 2);
    // Nothing is left for the next send to take over.
    expect((await rows(account.address)).filter((r) => r.state !== 'sent')).toEqual([]);
  });

  test('a broadcast the node refuses after another instance sent the next nonce: the gap is filled the same way', async () => {
    const account = await fundedAccount();
    // More than the wallet holds, with a gas limit given so nothing estimates it first: the node refuses the bytes.
    const { start, outcomeA, hashB } = await gapBehindLaterSend(account, { value: parseEther('1000'), gas: 21_000n }, 'broadcast');
    expect(outcomeA.ok).toBe(false);
    expect(!outcomeA.ok && outcomeA.error.message).toMatch(/node rejected the transaction/);

    expect((await verifyTransaction(client, hashB, 20_000)).receiptStatus).toBe('success');
    expect(await minedAt(account.address, start)).toMatchObject({ to: account.address.toLowerCase(), value: 0n });
    expect(await count(account.address, 'latest')).toBe(start + 2);
  });

  test('with no later nonce allocated, a failed send only frees its nonce (no gas spent) and the next send takes it', async () => {
    const account = await fundedAccount();
    const [a, b] = stores.map((store) => createSharedNonceManager(store));
    const start = await count(account.address, 'pending');
    const balance = await client.getBalance({ address: account.address });
    const failed = signAndBroadcast(
      { client, account, nonces: a! },
      { to: randomAddress(), value: 1n },
      {
        onSigned: async () => {
          throw new Error('store write failed');
        },
      },
    );
    await expect(failed).rejects.toThrow('store write failed');
    expect(await count(account.address, 'pending')).toBe(start);
    expect(await client.getBalance({ address: account.address })).toBe(balance);
    expect(await rows(account.address)).toEqual([{ nonce: start, state: 'free' }]);

    const { hash } = await signAndBroadcast({ client, account, nonces: b! }, { to: randomAddress(), value: 1n }, { onSigned: async () => {} });
    expect((await verifyTransaction(client, hash, 20_000)).receiptStatus).toBe('success');
    expect((await client.getTransaction({ hash })).nonce).toBe(start);
  });
});

describe('shared nonces: an instance that died between allocating and broadcasting', () => {
  /** What such an instance leaves behind: a row `allocated` at the wallet's next nonce, never answered (or `state`). */
  const abandon = (account: PrivateKeyAccount, nonce: number, at = Date.now(), state: 'allocated' | 'sent' = 'allocated') =>
    stores[0]!.insertInto('chain_nonces').values({ chain_id: client.chain!.id, address: account.address.toLowerCase(), nonce, state, at }).execute();

  test.each([
    ['a nonce its instance allocated and died before broadcasting', 'allocated' as const],
    // What a broadcast answered "maybe" (a timeout) leaves when the node never got it: a row marked sent, a gap at the node.
    ['a nonce marked sent whose bytes never reached the node', 'sent' as const],
  ])('%s, and no further send: after the grace the instance whose send waits behind the gap fills it, and its send is mined', async (_what, left) => {
    const account = await fundedAccount();
    const survivor = createSharedNonceManager(stores[1]!, { graceMs: 1_000 });
    const start = await count(account.address, 'pending');
    await abandon(account, start, Date.now(), left);
    const recipient = randomAddress();
    const { hash } = await signAndBroadcast({ client, account, nonces: survivor }, { to: recipient, value: parseEther('0.01') }, { onSigned: async () => {} });
    expect((await client.getTransaction({ hash })).nonce).toBe(start + 1);
    // Held behind the gap at first.
    expect(await count(account.address, 'latest')).toBe(start);

    // Nothing else is sent: the survivor's own timer fills the gap, and its transfer is mined.
    expect((await verifyTransaction(client, hash, 20_000)).receiptStatus).toBe('success');
    expect(await client.getBalance({ address: recipient })).toBe(parseEther('0.01'));
    expect(await minedAt(account.address, start)).toMatchObject({ to: account.address.toLowerCase(), value: 0n, input: '0x' });
    expect(await count(account.address, 'latest')).toBe(start + 2);
    await expect.poll(async () => (await rows(account.address)).filter((r) => r.state !== 'sent')).toEqual([]);
    survivor.close?.();
  });

  test('a fill the node refuses is tried again a grace later, and the send behind the gap is mined', async () => {
    const account = await fundedAccount();
    const survivor = createSharedNonceManager(stores[1]!, { graceMs: 1_000 });
    const start = await count(account.address, 'pending');
    await abandon(account, start);
    const { hash } = await signAndBroadcast({ client, account, nonces: survivor }, { to: randomAddress(), value: 1n }, { onSigned: async () => {} });
    // The wallet cannot pay for the fill when the grace ends: the node refuses it and the nonce is freed.
    await chain.setBalance(account.address, '0');
    await expect.poll(async () => (await rows(account.address)).find((r) => r.nonce === start)?.state, { timeout: 10_000 }).toBe('free');
    expect(await count(account.address, 'latest')).toBe(start);
    // Funded again, nothing else sent: the next attempt fills the gap.
    await chain.setBalance(account.address, '10');
    expect((await verifyTransaction(client, hash, 20_000)).receiptStatus).toBe('success');
    expect(await minedAt(account.address, start)).toMatchObject({ to: account.address.toLowerCase(), value: 0n, input: '0x' });
    survivor.close?.();
  });

  test('a fill the node keeps refusing is tried six times in all; then the next send takes the nonce over', async () => {
    const account = await fundedAccount();
    const survivor = createSharedNonceManager(stores[1]!, { graceMs: 300 });
    const lines: string[] = [];
    // Watched, not replaced: the manager's log lines still reach stderr.
    const write = console.error.bind(console);
    const log = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
      lines.push(args.map(String).join(' '));
      write(...args);
    });
    try {
      const start = await count(account.address, 'pending');
      await abandon(account, start);
      const { hash } = await signAndBroadcast({ client, account, nonces: survivor }, { to: randomAddress(), value: 1n }, { onSigned: async () => {} });
      await chain.setBalance(account.address, '0');
      const mine = (line: string) => line.includes(account.address);
      await expect.poll(() => lines.filter((l) => mine(l) && l.includes('gave up filling')).length, { timeout: 30_000 }).toBe(1);
      expect(lines.filter((l) => mine(l) && l.includes('could not fill nonce')).length).toBe(6);
      // Funded again, the survivor does not try once more: the gap waits for the next send.
      await chain.setBalance(account.address, '10');
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(await count(account.address, 'latest')).toBe(start);
      const { hash: next } = await signAndBroadcast({ client, account, nonces: survivor }, { to: randomAddress(), value: 1n }, { onSigned: async () => {} });
      expect((await client.getTransaction({ hash: next })).nonce).toBe(start);
      expect((await verifyTransaction(client, hash, 20_000)).receiptStatus).toBe('success');
      expect((await verifyTransaction(client, next, 20_000)).receiptStatus).toBe('success');
    } finally {
      log.mockRestore();
      survivor.close?.();
    }
  });

  test('a nonce its instance did broadcast before dying (the node has it) is left alone: no fill is spent on it', async () => {
    const account = await fundedAccount();
    const survivor = createSharedNonceManager(stores[1]!, { graceMs: 1_000 });
    const start = await count(account.address, 'pending');
    await abandon(account, start);
    const { hash } = await signAndBroadcast({ client, account, nonces: survivor }, { to: randomAddress(), value: 1n }, { onSigned: async () => {} });
    expect((await client.getTransaction({ hash })).nonce).toBe(start + 1);
    // The other instance's broadcast lands only now; it dies before marking its row sent.
    const walletClient = createWalletClient({ account, chain: chain.chain, transport: http(chain.url) });
    const theirs = await walletClient.sendTransaction({ to: randomAddress(), value: 1n, nonce: start });
    expect((await verifyTransaction(client, theirs, 20_000)).receiptStatus).toBe('success');
    expect((await verifyTransaction(client, hash, 20_000)).receiptStatus).toBe('success');
    // Well past the grace: the survivor's check found the nonce at the node, sent nothing for it and did not
    // hand it out again (a fill would have been refused, or on a slower chain replaced their transfer).
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(await count(account.address, 'latest')).toBe(start + 2);
    expect(await count(account.address, 'pending')).toBe(start + 2);
    expect((await rows(account.address)).find((r) => r.nonce === start)).toEqual({ nonce: start, state: 'allocated' });
    survivor.close?.();
  });
});
