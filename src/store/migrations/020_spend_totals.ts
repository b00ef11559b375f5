import type { Kysely } from 'kysely';

/**
 * What each organization has moved (or holds reserved) per asset per UTC day,
 * organization-wide (`chain_id` 0) and per EVM chain: the running sums the
 * daily caps compare against, kept beside `spend_reservations` by the code that
 * writes it (src/guards/spend-cap.ts). Before this a cap check summed every
 * reservation of the day, so each send cost more than the one before it.
 * `used` is a decimal string: wei sums pass 2^63.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('spend_totals')
    .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('chain_id', 'integer', (c) => c.notNull())
    .addColumn('used', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('spend_totals_pk', ['organization_id', 'asset', 'day', 'chain_id'])
    .execute();

  const counted = await db
    .selectFrom('spend_reservations')
    .select(['organization_id', 'asset', 'day', 'chain_id', 'amount'])
    .where('status', 'in', ['reserved', 'spent'])
    .execute();
  const sums = new Map<string, { organization_id: string; asset: string; day: string; chain_id: number; used: bigint }>();
  const add = (r: (typeof counted)[number], chainId: number) => {
    const key = `${r.organization_id}\0${r.asset}\0${r.day}\0${chainId}`;
    const sum = sums.get(key) ?? { organization_id: r.organization_id, asset: r.asset, day: r.day, chain_id: chainId, used: 0n };
    sum.used += BigInt(r.amount);
    sums.set(key, sum);
  };
  for (const r of counted) {
    add(r, 0);
    if (r.chain_id !== null) add(r, r.chain_id);
  }
  for (const s of sums.values())
    await db
      .insertInto('spend_totals')
      .values({ ...s, used: s.used.toString() })
      .execute();
}
