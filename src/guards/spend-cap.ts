import type { Transaction } from 'kysely';
import { sharedNow } from '../store/clock.ts';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { ServiceError } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import type { Store } from '../store/db.ts';
import type { Database } from '../store/schema.ts';

/**
 * Daily native-value caps (SPEC Limits): value moved, never gas; one budget
 * per organization per UTC day shared by direct execution and workflow steps;
 * no uncapped state. A reservation is written in the caller's transaction
 * (with its execution row) and checked after the insert, so the write lock is
 * held while summing: concurrent senders can never overshoot the cap.
 */

export type SpendAsset = 'evm-native' | 'solana-native';

/** SPEC "Spend-cap data", as GET /api/analytics/spend-cap and get_spending_limits answer it, plus the per-chain caps and the deployment maximum. */
export const spendCapDataSchema = z.object({
  dailyCapWei: z.string().nullable(),
  dailyUsedWei: z.string(),
  dailySolanaCapLamports: z.string().nullable(),
  dailySolanaUsedLamports: z.string(),
  effectiveDailyCapWei: z.string(),
  effectiveDailySolanaCapLamports: z.string(),
  usingDefaultDailyCap: z.boolean(),
  usingDefaultDailySolanaCap: z.boolean(),
  chainCaps: z
    .array(z.object({ chainId: z.number().int(), dailyCapWei: z.string(), effectiveDailyCapWei: z.string(), dailyUsedWei: z.string() }))
    .describe('Per-chain EVM caps: value moved on that chain per UTC day, within the organization-wide cap'),
  maximum: z.object({ dailyCapWei: z.string(), dailySolanaCapLamports: z.string() }).describe('The most an owner may set (the deployment maximum)'),
});
export type SpendCapData = z.output<typeof spendCapDataSchema>;

const utcDay = (date = new Date(sharedNow())) => date.toISOString().slice(0, 10);
/** `spend_totals.chain_id` of the organization-wide sum (no EVM chain has id 0). */
const ALL_CHAINS = 0;

type Db = Store | Transaction<Database>;

/** Today's counted total (`spend_totals`, migration 020): organization-wide, or on one EVM chain. */
async function usedToday(db: Db, organizationId: string, asset: SpendAsset, chainId?: number, day = utcDay()): Promise<bigint> {
  const row = await db
    .selectFrom('spend_totals')
    .select('used')
    .where((eb) => eb.and({ organization_id: organizationId, asset, day, chain_id: chainId ?? ALL_CHAINS }))
    .executeTakeFirst();
  return row ? BigInt(row.used) : 0n;
}

/**
 * Adds `delta` to a reservation's day totals (organization-wide and on its chain). Only inside the
 * transaction that writes the reservation or its status: on SQLite there is one writer, and every
 * PostgreSQL transaction takes the writer lock first (src/store/postgres.ts), so read-then-write is safe.
 */
async function addToTotals(trx: Store, r: { organization_id: string; asset: string; day: string; chain_id: number | null }, delta: bigint) {
  for (const chainId of r.chain_id === null ? [ALL_CHAINS] : [ALL_CHAINS, r.chain_id]) {
    const key = { organization_id: r.organization_id, asset: r.asset, day: r.day, chain_id: chainId };
    const row = await trx
      .selectFrom('spend_totals')
      .select('used')
      .where((eb) => eb.and(key))
      .executeTakeFirst();
    if (row) {
      await trx
        .updateTable('spend_totals')
        .set({ used: (BigInt(row.used) + delta).toString() })
        .where((eb) => eb.and(key))
        .execute();
    } else {
      await trx
        .insertInto('spend_totals')
        .values({ ...key, used: delta.toString() })
        .execute();
    }
  }
}

const atMost = (value: bigint, max: bigint) => (value < max ? value : max);

/** The caps in force: configured values, never above the deployment maximum (lowered after they were set), else the defaults. */
async function caps(db: Db, config: Config, organizationId: string) {
  const org = await db.selectFrom('organizations').select(['daily_cap_wei', 'daily_solana_cap_lamports']).where('id', '=', organizationId).executeTakeFirst();
  const chainRows = await db
    .selectFrom('organization_chain_caps')
    .select(['chain_id', 'daily_cap_wei'])
    .where('organization_id', '=', organizationId)
    .orderBy('chain_id')
    .execute();
  const { spend } = config;
  return {
    evmConfigured: org?.daily_cap_wei ?? null,
    solanaConfigured: org?.daily_solana_cap_lamports ?? null,
    evm: org?.daily_cap_wei ? atMost(BigInt(org.daily_cap_wei), spend.maxDailyValueCapWei) : spend.dailyValueCapWei,
    solana: org?.daily_solana_cap_lamports
      ? atMost(BigInt(org.daily_solana_cap_lamports), spend.maxDailySolanaValueCapLamports)
      : spend.dailySolanaValueCapLamports,
    chains: chainRows.map((r) => ({ chainId: r.chain_id, configured: r.daily_cap_wei, effective: atMost(BigInt(r.daily_cap_wei), spend.maxDailyValueCapWei) })),
  };
}

export async function spendCapData(store: Store, config: Config, organizationId: string): Promise<SpendCapData> {
  const c = await caps(store, config, organizationId);
  return {
    dailyCapWei: c.evmConfigured,
    dailyUsedWei: (await usedToday(store, organizationId, 'evm-native')).toString(),
    dailySolanaCapLamports: c.solanaConfigured,
    dailySolanaUsedLamports: (await usedToday(store, organizationId, 'solana-native')).toString(),
    effectiveDailyCapWei: c.evm.toString(),
    effectiveDailySolanaCapLamports: c.solana.toString(),
    usingDefaultDailyCap: c.evmConfigured === null,
    usingDefaultDailySolanaCap: c.solanaConfigured === null,
    chainCaps: await Promise.all(
      c.chains.map(async (chain) => ({
        chainId: chain.chainId,
        dailyCapWei: chain.configured,
        effectiveDailyCapWei: chain.effective.toString(),
        dailyUsedWei: (await usedToday(store, organizationId, 'evm-native', chain.chainId)).toString(),
      })),
    ),
    maximum: { dailyCapWei: config.spend.maxDailyValueCapWei.toString(), dailySolanaCapLamports: config.spend.maxDailySolanaValueCapLamports.toString() },
  };
}

/**
 * The cap `amount` more would pass today, if any: `used` already counts
 * everything reserved (including `amount` when `included`). Shared by the
 * reservation (which has inserted its row) and the simulation (which has not).
 */
/**
 * `day`: the UTC day the amount counts on. A reservation passes the day it was written for: read apart, a
 * reservation written at 23:59:59.999 was checked against the next day's totals, which did not hold it.
 */
async function capPassed(
  db: Db,
  config: Config,
  r: { organizationId: string; asset: SpendAsset; amount: bigint; chainId?: number },
  included: boolean,
  day = utcDay(),
) {
  const c = await caps(db, config, r.organizationId);
  const pending = included ? 0n : r.amount;
  const solana = r.asset === 'solana-native';
  const used = (await usedToday(db, r.organizationId, r.asset, undefined, day)) + pending;
  const cap = solana ? c.solana : c.evm;
  if (used > cap) return { solana, cap, usedBefore: used - r.amount, chainId: undefined };
  const chainCap = solana || r.chainId === undefined ? undefined : c.chains.find((x) => x.chainId === r.chainId);
  if (chainCap) {
    const onChain = (await usedToday(db, r.organizationId, r.asset, r.chainId, day)) + pending;
    if (onChain > chainCap.effective) return { solana, cap: chainCap.effective, usedBefore: onChain - r.amount, chainId: r.chainId };
  }
  return undefined;
}

type Passed = NonNullable<Awaited<ReturnType<typeof capPassed>>>;

function capExceeded(p: Passed, amount: bigint): ServiceError {
  const unit = p.solana ? 'lamports' : 'wei';
  const which = p.chainId === undefined ? "today's" : `today's chain ${p.chainId}`;
  return new ServiceError(403, 'daily_spending_cap_exceeded', p.solana ? 'Daily Solana spending cap exceeded' : 'Daily spending cap exceeded', {
    message: `This transaction moves ${amount} ${unit}; ${p.usedBefore.toString()} of ${which} ${p.cap} ${unit} cap is already used (UTC day ${utcDay()}). Gas does not count. Wait for the next UTC day or ask an owner to raise the cap.`,
    [p.solana ? 'dailySolanaCapLamports' : 'dailyCapWei']: p.cap.toString(),
    [p.solana ? 'dailySolanaUsedLamports' : 'dailyUsedWei']: p.usedBefore.toString(),
    ...(p.chainId === undefined ? {} : { chainId: p.chainId }),
  });
}

/** What a simulation reports: the cap this value would pass today (organization-wide or on its chain), or undefined. */
export async function simulatedCapRefusal(store: Store, config: Config, r: { organizationId: string; amount: bigint; chainId: number }) {
  const passed = await capPassed(store, config, { ...r, asset: 'evm-native' }, false);
  return (
    passed && {
      dailyCapWei: passed.cap.toString(),
      dailyUsedWei: passed.usedBefore.toString(),
      ...(passed.chainId === undefined ? {} : { chainId: passed.chainId }),
    }
  );
}

/** Reserves `amount` inside `trx`; throws 403 (rolling the caller's transaction back) when it would exceed today's cap, organization-wide or on its chain. */
export async function reserveSpend(
  trx: Transaction<Database>,
  config: Config,
  reservation: { organizationId: string; asset: SpendAsset; amount: bigint; source: 'direct' | 'workflow'; executionId: string; chainId?: number },
): Promise<string> {
  const row = {
    id: newId(),
    organization_id: reservation.organizationId,
    asset: reservation.asset,
    day: utcDay(),
    amount: reservation.amount.toString(),
    source: reservation.source,
    execution_id: reservation.executionId,
    status: 'reserved',
    created_at: nowIso(),
    chain_id: reservation.chainId ?? null,
    transaction_hash: null,
  };
  await trx.insertInto('spend_reservations').values(row).execute();
  await addToTotals(trx, row, reservation.amount);
  const passed = await capPassed(trx, config, reservation, true, row.day);
  if (passed) throw capExceeded(passed, reservation.amount);
  return row.id;
}

export async function settleSpend(store: Store, reservationId: string, status: 'spent' | 'released'): Promise<void> {
  await settleWhere(store, 'id', reservationId, status);
}

/**
 * Notes the transaction a held reservation's value moves in, before it is broadcast. Throws when the reservation is no
 * longer held: the stale-reservation sweep released it, taking its sender for one whose process died, and the throw
 * stops the broadcast, so value is never moved on a released reservation.
 */
export async function noteReservationSigned(store: Store, reservation: { id: string; executionId: string }, transactionHash: string): Promise<void> {
  const noted = await store
    .updateTable('spend_reservations')
    .set({ transaction_hash: transactionHash })
    .where('id', '=', reservation.id)
    .where('status', '=', 'reserved')
    .executeTakeFirst();
  if (Number(noted.numUpdatedRows) === 0) {
    throw endedBeforeSigning(reservation.executionId, 'its spend reservation was released');
  }
}

/**
 * The answer of a send that took longer than any live one can before it was signed (waiting on the chain's node) and
 * was ended by a sweep meanwhile: nothing was signed or sent.
 */
export const endedBeforeSigning = (executionId: string, what: string) =>
  new ServiceError(
    503,
    'rpc_unavailable',
    `Execution ${executionId} took longer than a request can before it was signed (waiting on the chain's node); ${what}, and nothing was signed or sent. Retry.`,
    { retryable: true, executionId },
  );

/**
 * Reservations held for longer than `heldBefore` (their sender should have settled them), oldest first after `after`.
 * Only those counted on today's or yesterday's cap: an older day's total no longer limits anything.
 */
export function staleReservations(store: Store, heldBefore: string, limit: number, after?: { createdAt: string; id: string }) {
  return store
    .selectFrom('spend_reservations')
    .select(['id', 'chain_id', 'transaction_hash', 'created_at'])
    .where('status', '=', 'reserved')
    .where('created_at', '<', heldBefore)
    .where('day', '>=', utcDay(new Date(sharedNow() - 86_400_000)))
    .$if(after !== undefined, (q) =>
      q.where((eb) => eb.or([eb('created_at', '>', after!.createdAt), eb.and([eb('created_at', '=', after!.createdAt), eb('id', '>', after!.id)])])),
    )
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** Settles whatever is still reserved for an execution (recovery after a crash); in `via`, the transaction writing its outcome, when given. */
export async function settleSpendForExecution(store: Store, executionId: string, status: 'spent' | 'released', via?: Store): Promise<void> {
  await settleWhere(store, 'execution_id', executionId, status, {}, via);
}

/** Releases a reservation never signed for (nothing was broadcast); false when it was signed meanwhile or is settled. */
export async function releaseUnsigned(store: Store, reservationId: string): Promise<boolean> {
  return (await settleWhere(store, 'id', reservationId, 'released', { unsigned: true })) > 0;
}

/**
 * Reserved → spent (the totals already count it) or released (its amount taken back out of the day's totals in the
 * same transaction); `unsigned`: only reservations no transaction was noted for. Returns how many it settled.
 */
async function settleWhere(
  store: Store,
  column: 'id' | 'execution_id',
  value: string,
  status: 'spent' | 'released',
  only: { unsigned?: boolean } = {},
  via?: Store,
) {
  if (status === 'spent') {
    const spent = await (via ?? store)
      .updateTable('spend_reservations')
      .set({ status })
      .where(column, '=', value)
      .where('status', '=', 'reserved')
      .executeTakeFirst();
    return Number(spent.numUpdatedRows);
  }
  const release = async (trx: Store) => {
    const rows = await trx
      .selectFrom('spend_reservations')
      .select(['id', 'organization_id', 'asset', 'day', 'chain_id', 'amount'])
      .where(column, '=', value)
      .where('status', '=', 'reserved')
      .$if(only.unsigned === true, (q) => q.where('transaction_hash', 'is', null))
      .execute();
    if (rows.length === 0) return 0;
    // Conditional again as written: a reservation settled, or signed for, since the read above keeps its state.
    const released = new Set(
      (
        await trx
          .updateTable('spend_reservations')
          .set({ status })
          .where(
            'id',
            'in',
            rows.map((r) => r.id),
          )
          .where('status', '=', 'reserved')
          .$if(only.unsigned === true, (q) => q.where('transaction_hash', 'is', null))
          .returning('id')
          .execute()
      ).map((r) => r.id),
    );
    for (const r of rows) if (released.has(r.id)) await addToTotals(trx, r, -BigInt(r.amount));
    return released.size;
  };
  return via ? release(via) : store.transaction().execute(release);
}

/** What a receipt proves about the value: success spent it, a revert moved none; anything else stays reserved (fail closed). */
export const spendOutcome = (receiptStatus: string | undefined): 'spent' | 'released' | undefined =>
  receiptStatus === 'success' ? 'spent' : receiptStatus === 'reverted' ? 'released' : undefined;
