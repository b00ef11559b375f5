import { afterAll, expect, test } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { reserveSpend, settleSpend, settleSpendForExecution, spendCapData } from '../src/guards/spend-cap.ts';
import { migrate, type Store } from '../src/store/db.ts';
import { openTestStore, tempDir } from './helpers/gateway.ts';

/**
 * The daily caps compare against running totals (migration 020) instead of
 * summing every reservation of the day. On the store FLOWGATE_TEST_DATABASE
 * selects: the totals must say exactly what the reservations say, past 2^63
 * wei, through reserve, spend and release, and for rows written before 020.
 */

const CAP = 10n ** 24n;
const config = loadConfig({
  FLOWGATE_DATA_DIR: tempDir(),
  FLOWGATE_DEVNET: 'off',
  EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI: CAP.toString(),
  FLOWGATE_MAX_DAILY_VALUE_CAP_WEI: CAP.toString(),
});
const today = new Date().toISOString().slice(0, 10);
const stores: Store[] = [];
afterAll(async () => {
  for (const store of stores) await store.destroy();
});

async function storeWithOrganization(migratedTo?: string): Promise<Store> {
  const store = await openTestStore();
  stores.push(store);
  await migrate(store, migratedTo);
  const at = new Date().toISOString();
  await store.insertInto('organizations').values({ id: 'org', slug: 'org', name: 'Org', created_at: at }).execute();
  await store
    .insertInto('organization_chain_caps')
    .values(
      [1, 8453].map((chainId) => ({ organization_id: 'org', chain_id: chainId, daily_cap_wei: (10n ** 23n).toString(), updated_at: at, updated_by: null })),
    )
    .execute();
  return store;
}

const used = async (store: Store) => {
  const data = await spendCapData(store, config, 'org');
  return {
    evm: data.dailyUsedWei,
    solana: data.dailySolanaUsedLamports,
    chains: Object.fromEntries(data.chainCaps.map((c) => [c.chainId, c.dailyUsedWei])),
  };
};

test('migration 020 sums the counted reservations stored before it, exactly, per chain and asset, today only', async () => {
  const store = await storeWithOrganization('019_store_settings');
  const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
  const row = (id: string, amount: string, status: string, extra: { asset?: string; day?: string; chain_id?: number | null } = {}) => ({
    id,
    organization_id: 'org',
    asset: extra.asset ?? 'evm-native',
    day: extra.day ?? today,
    amount,
    source: 'direct',
    execution_id: `x-${id}`,
    status,
    created_at: new Date().toISOString(),
    chain_id: extra.chain_id === undefined ? 1 : extra.chain_id,
  });
  await store
    .insertInto('spend_reservations')
    .values([
      row('a', '3000000000000000000000', 'reserved'),
      row('b', '5', 'spent', { chain_id: 8453 }),
      row('c', '100', 'released'),
      // Before migration 013 rows had no chain: organization-wide only.
      row('d', '11', 'spent', { chain_id: null }),
      row('e', '7', 'spent', { asset: 'solana-native', chain_id: null }),
      row('f', '999', 'spent', { day: yesterday }),
    ])
    .execute();
  await migrate(store);
  expect(await used(store)).toEqual({ evm: '3000000000000000000016', solana: '7', chains: { 1: '3000000000000000000000', 8453: '5' } });
});

test('reserving adds to the totals, spending keeps the amount, releasing takes it back once', async () => {
  const store = await storeWithOrganization();
  const reserve = (amount: bigint, executionId: string, chainId?: number, asset: 'evm-native' | 'solana-native' = 'evm-native') =>
    store.transaction().execute((trx) => reserveSpend(trx, config, { organizationId: 'org', asset, amount, source: 'direct', executionId, chainId }));

  const big = await reserve(2n ** 64n, 'x1', 1);
  const small = await reserve(10n, 'x2', 8453);
  await reserve(3n, 'x3', undefined, 'solana-native');
  expect(await used(store)).toEqual({ evm: (2n ** 64n + 10n).toString(), solana: '3', chains: { 1: (2n ** 64n).toString(), 8453: '10' } });

  await settleSpend(store, big, 'spent');
  await settleSpend(store, small, 'released');
  expect(await used(store)).toEqual({ evm: (2n ** 64n).toString(), solana: '3', chains: { 1: (2n ** 64n).toString(), 8453: '0' } });

  // Settled already: a second release (a retry, or recovery after a crash) changes nothing.
  await settleSpend(store, small, 'released');
  await settleSpend(store, big, 'released');
  await settleSpendForExecution(store, 'x3', 'released');
  await settleSpendForExecution(store, 'x3', 'released');
  expect(await used(store)).toEqual({ evm: (2n ** 64n).toString(), solana: '0', chains: { 1: (2n ** 64n).toString(), 8453: '0' } });
});

test('a reservation over the cap is refused and leaves neither a row nor a total behind', async () => {
  const store = await storeWithOrganization();
  const reserve = (amount: bigint, executionId: string) =>
    store
      .transaction()
      .execute((trx) => reserveSpend(trx, config, { organizationId: 'org', asset: 'evm-native', amount, source: 'direct', executionId, chainId: 10 }));
  await reserve(CAP - 1n, 'ok');
  await expect(reserve(2n, 'over')).rejects.toMatchObject({ code: 'daily_spending_cap_exceeded' });
  expect(await store.selectFrom('spend_reservations').select('execution_id').execute()).toEqual([{ execution_id: 'ok' }]);
  expect((await used(store)).evm).toBe((CAP - 1n).toString());
});
