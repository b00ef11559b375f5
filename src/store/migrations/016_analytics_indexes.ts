import { sql, type Kysely } from 'kysely';
import { dialectOf, POSTGRES_JSON_ARRAY_FUNCTION, type SqlDialect } from '../dialect.ts';

/**
 * Analytics (SPEC "Analytics") over a million stored runs.
 *
 * - Run pages read one organization's runs newest first: an index on
 *   (organization_id, created_at, id, status) per table is their keyset
 *   order, with the status filter in the index.
 * - Totals, time series and networks read hourly rollups instead of runs:
 *   `run_rollups` (per organization, hour and source: runs, successes,
 *   failures, duration sum and count, gas) and `network_rollups` (per
 *   organization, hour and chain: runs and gas). Triggers keep them exact
 *   on every insert, delete and change of a counted column (a row's old
 *   contribution is taken out and its new one added), so no write path has
 *   to know about them; heartbeats and lease renewals touch no counted
 *   column and fire nothing. Queries add the partial hours at a range's
 *   edges from the runs themselves (src/analytics/aggregates.ts).
 *
 * Wei amounts are decimal text and their sums can outgrow 64 bits, so gas
 * is kept as two integers, the digits above and below 1e9. On PostgreSQL
 * the triggers are PL/pgSQL functions with the same arithmetic; the dialect's
 * spellings are in ../dialect.ts.
 */

const ON_CONFLICT_RUNS = `on conflict (organization_id, hour, source) do update set
  runs = run_rollups.runs + excluded.runs, ok = run_rollups.ok + excluded.ok, failed = run_rollups.failed + excluded.failed,
  duration_sum = run_rollups.duration_sum + excluded.duration_sum, duration_count = run_rollups.duration_count + excluded.duration_count,
  gas_high = run_rollups.gas_high + excluded.gas_high, gas_low = run_rollups.gas_low + excluded.gas_low`;
const ON_CONFLICT_NETWORKS = `on conflict (organization_id, hour, chain_id) do update set
  runs = network_rollups.runs + excluded.runs, gas_high = network_rollups.gas_high + excluded.gas_high, gas_low = network_rollups.gas_low + excluded.gas_low`;

/** 1 when the condition holds, else 0 (PostgreSQL does not do arithmetic on booleans). */
const flag = (condition: string) => `(case when ${condition} then 1 else 0 end)`;
const hourOf = (d: SqlDialect, row: string) => `${d.epochSeconds(`${row}.created_at`)} / 3600`;

type Contribution = (d: SqlDialect, row: 'NEW' | 'OLD', sign: 1 | -1) => string;

/** `sign` 1 adds the row's contribution, -1 takes it out. */
const workflowContribution: Contribution = (d, row, sign) => {
  const timed = `${row}.started_at is not null and ${row}.completed_at is not null`;
  // Transactions per chain: a run counts once on each chain it sent on. Unreadable JSON counts as none rather than failing the engine's write.
  const txGas = d.jsonField('tx.value', 'gasUsedWei');
  const chain = d.jsonInteger('tx.value', 'chainId');
  return `
  insert into run_rollups (organization_id, hour, source, runs, ok, failed, duration_sum, duration_count, gas_high, gas_low)
  values (${row}.organization_id, ${hourOf(d, row)}, 'workflow', ${sign},
    ${sign} * ${flag(`${row}.status = 'success'`)}, ${sign} * ${flag(`${row}.status in ('error', 'system_error')`)},
    ${sign} * (case when ${timed} then ${d.millisBetween(`${row}.started_at`, `${row}.completed_at`)} else 0 end), ${sign} * ${flag(timed)},
    ${sign} * ${d.weiHigh(`${row}.gas_used_wei`)}, ${sign} * ${d.weiLow(`${row}.gas_used_wei`)})
  ${ON_CONFLICT_RUNS};
  insert into network_rollups (organization_id, hour, chain_id, runs, gas_high, gas_low)
  select ${row}.organization_id, ${hourOf(d, row)}, ${chain}, ${sign}, ${sign} * sum(${d.weiHigh(txGas)}), ${sign} * sum(${d.weiLow(txGas)})
  from ${d.jsonArrayRows(`${row}.transaction_hashes`, 'tx')} where ${chain} is not null group by 3
  ${ON_CONFLICT_NETWORKS};`;
};

const directContribution: Contribution = (d, row, sign) => `
  insert into run_rollups (organization_id, hour, source, runs, ok, failed, duration_sum, duration_count, gas_high, gas_low)
  values (${row}.organization_id, ${hourOf(d, row)}, 'direct', ${sign},
    ${sign} * ${flag(`${row}.status = 'completed'`)}, ${sign} * ${flag(`${row}.status = 'failed'`)},
    ${sign} * (case when ${row}.completed_at is not null then ${d.millisBetween(`${row}.created_at`, `${row}.completed_at`)} else 0 end), ${sign} * ${flag(`${row}.completed_at is not null`)},
    ${sign} * ${d.weiHigh(`${row}.gas_used_wei`)}, ${sign} * ${d.weiLow(`${row}.gas_used_wei`)})
  ${ON_CONFLICT_RUNS};
  insert into network_rollups (organization_id, hour, chain_id, runs, gas_high, gas_low)
  values (${row}.organization_id, ${hourOf(d, row)}, ${row}.chain_id, ${sign}, ${sign} * ${d.weiHigh(`${row}.gas_used_wei`)}, ${sign} * ${d.weiLow(`${row}.gas_used_wei`)})
  ${ON_CONFLICT_NETWORKS};`;

const COUNTED = {
  workflow_executions: ['organization_id', 'created_at', 'status', 'started_at', 'completed_at', 'gas_used_wei', 'transaction_hashes'],
  direct_executions: ['organization_id', 'created_at', 'status', 'chain_id', 'completed_at', 'gas_used_wei'],
};

async function rollupTriggers(db: Kysely<any>, d: SqlDialect, table: keyof typeof COUNTED, contribution: Contribution): Promise<void> {
  if (d.postgres) {
    // One PL/pgSQL function per table does what SQLite's three triggers do.
    await sql
      .raw(
        `create function ${table}_rollup() returns trigger language plpgsql as $$
begin
  if tg_op in ('UPDATE', 'DELETE') then ${contribution(d, 'OLD', -1)} end if;
  if tg_op in ('UPDATE', 'INSERT') then ${contribution(d, 'NEW', 1)} end if;
  return null;
end $$`,
      )
      .execute(db);
    await sql
      .raw(
        `create trigger ${table}_rollup after insert or delete or update of ${COUNTED[table].join(', ')} on ${table} for each row execute function ${table}_rollup()`,
      )
      .execute(db);
    return;
  }
  await sql.raw(`create trigger ${table}_rollup_insert after insert on ${table} begin ${contribution(d, 'NEW', 1)} end`).execute(db);
  await sql.raw(`create trigger ${table}_rollup_delete after delete on ${table} begin ${contribution(d, 'OLD', -1)} end`).execute(db);
  await sql
    .raw(
      `create trigger ${table}_rollup_update after update of ${COUNTED[table].join(', ')} on ${table} begin ${contribution(d, 'OLD', -1)} ${contribution(d, 'NEW', 1)} end`,
    )
    .execute(db);
}

export async function up(db: Kysely<any>): Promise<void> {
  const d = dialectOf(db);
  await db.schema.createIndex('workflow_executions_org_created').on('workflow_executions').columns(['organization_id', 'created_at', 'id', 'status']).execute();
  // The new index starts with the old one's columns: the old one would only cost writes.
  await db.schema.dropIndex('direct_executions_org_created').execute();
  await db.schema.createIndex('direct_executions_org_created_id').on('direct_executions').columns(['organization_id', 'created_at', 'id', 'status']).execute();

  await db.schema
    .createTable('run_rollups')
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('hour', 'integer', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('runs', 'integer', (c) => c.notNull())
    .addColumn('ok', 'integer', (c) => c.notNull())
    .addColumn('failed', 'integer', (c) => c.notNull())
    .addColumn('duration_sum', d.postgres ? 'double precision' : 'real', (c) => c.notNull())
    .addColumn('duration_count', 'integer', (c) => c.notNull())
    .addColumn('gas_high', 'integer', (c) => c.notNull())
    .addColumn('gas_low', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_rollups_pk', ['organization_id', 'hour', 'source'])
    .execute();
  await db.schema
    .createTable('network_rollups')
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('hour', 'integer', (c) => c.notNull())
    .addColumn('chain_id', 'integer', (c) => c.notNull())
    .addColumn('runs', 'integer', (c) => c.notNull())
    .addColumn('gas_high', 'integer', (c) => c.notNull())
    .addColumn('gas_low', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('network_rollups_pk', ['organization_id', 'hour', 'chain_id'])
    .execute();
  if (d.postgres) await sql.raw(POSTGRES_JSON_ARRAY_FUNCTION).execute(db);
  await rollupTriggers(db, d, 'workflow_executions', workflowContribution);
  await rollupTriggers(db, d, 'direct_executions', directContribution);

  // Runs stored before this migration, counted once.
  const hour = sql.raw(hourOf(d, 'r'));
  const timed = 'started_at is not null and completed_at is not null';
  await sql`insert into run_rollups (organization_id, hour, source, runs, ok, failed, duration_sum, duration_count, gas_high, gas_low)
    select organization_id, ${hour}, 'workflow', count(*), sum(${sql.raw(flag("status = 'success'"))}), sum(${sql.raw(flag("status in ('error', 'system_error')"))}),
      sum(case when ${sql.raw(timed)} then ${sql.raw(d.millisBetween('started_at', 'completed_at'))} else 0 end),
      sum(${sql.raw(flag(timed))}), sum(${sql.raw(d.weiHigh('gas_used_wei'))}), sum(${sql.raw(d.weiLow('gas_used_wei'))})
    from workflow_executions r group by 1, 2`.execute(db);
  await sql`insert into run_rollups (organization_id, hour, source, runs, ok, failed, duration_sum, duration_count, gas_high, gas_low)
    select organization_id, ${hour}, 'direct', count(*), sum(${sql.raw(flag("status = 'completed'"))}), sum(${sql.raw(flag("status = 'failed'"))}),
      sum(case when completed_at is not null then ${sql.raw(d.millisBetween('created_at', 'completed_at'))} else 0 end),
      sum(${sql.raw(flag('completed_at is not null'))}), sum(${sql.raw(d.weiHigh('gas_used_wei'))}), sum(${sql.raw(d.weiLow('gas_used_wei'))})
    from direct_executions r group by 1, 2`.execute(db);
  const txGas = d.jsonField('tx.value', 'gasUsedWei');
  const chain = sql.raw(d.jsonInteger('tx.value', 'chainId'));
  await sql`insert into network_rollups (organization_id, hour, chain_id, runs, gas_high, gas_low)
    select organization_id, hour, chain_id, sum(runs), sum(gas_high), sum(gas_low) from (
      select r.organization_id, ${hour} as hour, ${chain} as chain_id, count(distinct r.id) as runs,
        sum(${sql.raw(d.weiHigh(txGas))}) as gas_high, sum(${sql.raw(d.weiLow(txGas))}) as gas_low
      from workflow_executions r, ${sql.raw(d.jsonArrayRows('r.transaction_hashes', 'tx'))}
      where ${chain} is not null group by 1, 2, 3
      union all
      select organization_id, ${hour}, chain_id, count(*), sum(${sql.raw(d.weiHigh('gas_used_wei'))}), sum(${sql.raw(d.weiLow('gas_used_wei'))})
      from direct_executions r group by 1, 2, 3
    ) contributions group by 1, 2, 3`.execute(db);
}
