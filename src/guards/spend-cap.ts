import type { Transaction } from 'kysely';
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

/** SPEC "Spend-cap data", as GET /api/analytics/spend-cap and get_spending_limits answer it. */
export const spendCapDataSchema = z.object({
  dailyCapWei: z.string().nullable(),
  dailyUsedWei: z.string(),
  dailySolanaCapLamports: z.string().nullable(),
  dailySolanaUsedLamports: z.string(),
  effectiveDailyCapWei: z.string(),
  effectiveDailySolanaCapLamports: z.string(),
  usingDefaultDailyCap: z.boolean(),
  usingDefaultDailySolanaCap: z.boolean(),
});
export type SpendCapData = z.output<typeof spendCapDataSchema>;

const utcDay = (date = new Date()) => date.toISOString().slice(0, 10);
const COUNTED = ['reserved', 'spent'];

async function usedToday(db: Store | Transaction<Database>, organizationId: string, asset: SpendAsset): Promise<bigint> {
  const rows = await db
    .selectFrom('spend_reservations')
    .select('amount')
    .where('organization_id', '=', organizationId)
    .where('asset', '=', asset)
    .where('day', '=', utcDay())
    .where('status', 'in', COUNTED)
    .execute();
  return rows.reduce((sum, r) => sum + BigInt(r.amount), 0n);
}

async function caps(db: Store | Transaction<Database>, config: Config, organizationId: string) {
  const org = await db.selectFrom('organizations').select(['daily_cap_wei', 'daily_solana_cap_lamports']).where('id', '=', organizationId).executeTakeFirst();
  return {
    evmConfigured: org?.daily_cap_wei ?? null,
    solanaConfigured: org?.daily_solana_cap_lamports ?? null,
    evm: org?.daily_cap_wei ? BigInt(org.daily_cap_wei) : config.spend.dailyValueCapWei,
    solana: org?.daily_solana_cap_lamports ? BigInt(org.daily_solana_cap_lamports) : config.spend.dailySolanaValueCapLamports,
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
  };
}

/** Reserves `amount` inside `trx`; throws 403 (rolling the caller's transaction back) when it would exceed today's cap. */
export async function reserveSpend(
  trx: Transaction<Database>,
  config: Config,
  reservation: { organizationId: string; asset: SpendAsset; amount: bigint; source: 'direct' | 'workflow'; executionId: string },
): Promise<string> {
  const id = newId();
  await trx
    .insertInto('spend_reservations')
    .values({
      id,
      organization_id: reservation.organizationId,
      asset: reservation.asset,
      day: utcDay(),
      amount: reservation.amount.toString(),
      source: reservation.source,
      execution_id: reservation.executionId,
      status: 'reserved',
      created_at: nowIso(),
    })
    .execute();
  const used = await usedToday(trx, reservation.organizationId, reservation.asset);
  const c = await caps(trx, config, reservation.organizationId);
  const cap = reservation.asset === 'evm-native' ? c.evm : c.solana;
  if (used > cap) {
    const solana = reservation.asset === 'solana-native';
    const unit = solana ? 'lamports' : 'wei';
    throw new ServiceError(403, 'daily_spending_cap_exceeded', solana ? 'Daily Solana spending cap exceeded' : 'Daily spending cap exceeded', {
      message: `This transaction moves ${reservation.amount} ${unit}; ${(used - reservation.amount).toString()} of today's ${cap} ${unit} cap is already used (UTC day ${utcDay()}). Gas does not count. Wait for the next UTC day or raise the cap.`,
      [solana ? 'dailySolanaCapLamports' : 'dailyCapWei']: cap.toString(),
      [solana ? 'dailySolanaUsedLamports' : 'dailyUsedWei']: (used - reservation.amount).toString(),
    });
  }
  return id;
}

export async function settleSpend(store: Store, reservationId: string, status: 'spent' | 'released'): Promise<void> {
  await store.updateTable('spend_reservations').set({ status }).where('id', '=', reservationId).where('status', '=', 'reserved').execute();
}

/** Settles whatever is still reserved for an execution (recovery after a crash). */
export async function settleSpendForExecution(store: Store, executionId: string, status: 'spent' | 'released'): Promise<void> {
  await store.updateTable('spend_reservations').set({ status }).where('execution_id', '=', executionId).where('status', '=', 'reserved').execute();
}

/** What a receipt proves about the value: success spent it, a revert moved none; anything else stays reserved (fail closed). */
export const spendOutcome = (receiptStatus: string | undefined): 'spent' | 'released' | undefined =>
  receiptStatus === 'success' ? 'spent' : receiptStatus === 'reverted' ? 'released' : undefined;
