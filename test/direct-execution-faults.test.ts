import { sql } from 'kysely';
import { parseEther, type Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { randomAddress } from './helpers/web3.ts';

/**
 * A store error after a transaction was broadcast: settling the day's spend
 * reservation failed, and the edge answered "nothing was signed", released
 * the idempotency key and marked the execution failed, so the retry the
 * answer invited sent the money a second time. The fault is a trigger in the
 * real database that refuses the settlement.
 */

let chain: TestChain;
let gw: TestGateway;
const postgres = process.env.FLOWGATE_TEST_DATABASE === 'postgres';

beforeAll(async () => {
  chain = await startTestChain(31337);
  gw = await startTestGateway({
    env: {
      FLOWGATE_DEVNET: 'auto',
      FLOWGATE_RPC_URL_31337: chain.url,
      FLOWGATE_RATE_LIMITS: 'off',
      EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI: parseEther('5').toString(),
    },
  });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await chain?.stop();
});

/** Refuses every settlement of a spend reservation as spent while it is in place. */
async function refuseSettlements(on: boolean) {
  const { store } = gw.gateway.services;
  if (postgres) {
    if (on) {
      await sql`create or replace function flowgate_test_fault() returns trigger language plpgsql as $$ begin raise exception 'injected settlement fault'; end $$`.execute(
        store,
      );
      await sql`create trigger fault_spent before update on spend_reservations for each row when (new.status = 'spent') execute function flowgate_test_fault()`.execute(
        store,
      );
    } else await sql`drop trigger fault_spent on spend_reservations`.execute(store);
  } else if (on) {
    await sql`create trigger fault_spent before update on spend_reservations when new.status = 'spent' begin select raise(abort, 'injected settlement fault'); end`.execute(
      store,
    );
  } else await sql`drop trigger fault_spent`.execute(store);
}

describe('a store error after the broadcast', () => {
  it('answers what happened on chain and keeps the key, so the retry replays instead of sending again', async () => {
    const to: Address = randomAddress();
    const transfer = () =>
      fetchJson(`${gw.url}/api/execute/transfer`, {
        method: 'POST',
        key: gw.ownerKey,
        headers: { 'idempotency-key': `fault-${to}` },
        body: JSON.stringify({ chainId: 31337, recipientAddress: to, amount: '0.01' }),
      });
    await refuseSettlements(true);
    let first;
    try {
      first = await transfer();
    } finally {
      await refuseSettlements(false);
    }
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    expect(first.body).toMatchObject({ status: 'completed', transactionHash: expect.stringMatching(/^0x/) });
    expect(JSON.stringify(first.body)).not.toContain('nothing was signed');
    expect(await chain.publicClient.getBalance({ address: to })).toBe(parseEther('0.01'));

    const retry = await transfer();
    expect(retry.status).toBe(202);
    expect(retry.body).toMatchObject({ executionId: first.body.executionId, idempotentReplay: true });
    expect(await chain.publicClient.getBalance({ address: to })).toBe(parseEther('0.01'));

    // The reservation the store could not settle still counts against the day's cap (fail closed).
    const caps = await fetchJson(`${gw.url}/api/analytics/spend-cap`, { key: gw.ownerKey });
    expect(BigInt(JSON.stringify(caps.body).match(/"dailyUsedWei":"(\d+)"/)?.[1] ?? '0')).toBeGreaterThanOrEqual(parseEther('0.01'));
  }, 60_000);
});
