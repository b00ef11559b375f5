import { sql, type Kysely } from 'kysely';

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
 * is kept as two integers, the digits above and below 1e9. Triggers are
 * SQLite's; a PostgreSQL store needs the same three per table in PL/pgSQL.
 */

const hourOf = (row: string) => `cast(strftime('%s', ${row}.created_at) as integer) / 3600`;
const weiHigh = (expr: string) => `coalesce(cast(substr(${expr}, 1, length(${expr}) - 9) as integer), 0)`;
const weiLow = (expr: string) => `coalesce(cast(substr(${expr}, max(length(${expr}) - 8, 1)) as integer), 0)`;
const millis = (from: string, to: string) => `(julianday(${to}) - julianday(${from})) * 86400000.0`;
const ON_CONFLICT_RUNS = `on conflict (organization_id, hour, source) do update set
  runs = runs + excluded.runs, ok = ok + excluded.ok, failed = failed + excluded.failed,
  duration_sum = duration_sum + excluded.duration_sum, duration_count = duration_count + excluded.duration_count,
  gas_high = gas_high + excluded.gas_high, gas_low = gas_low + excluded.gas_low`;
const ON_CONFLICT_NETWORKS = `on conflict (organization_id, hour, chain_id) do update set
  runs = runs + excluded.runs, gas_high = gas_high + excluded.gas_high, gas_low = gas_low + excluded.gas_low`;

/** `sign` 1 adds the row's contribution, -1 takes it out. */
function workflowContribution(row: 'NEW' | 'OLD', sign: 1 | -1): string {
  const timed = `${row}.started_at is not null and ${row}.completed_at is not null`;
  // Transactions per chain: a run counts once on each chain it sent on. Unreadable JSON counts as none rather than failing the engine's write.
  const txs = `json_each(case when json_valid(${row}.transaction_hashes) then ${row}.transaction_hashes else '[]' end)`;
  const txGas = `json_extract(value, '$.gasUsedWei')`;
  return `
  insert into run_rollups (organization_id, hour, source, runs, ok, failed, duration_sum, duration_count, gas_high, gas_low)
  values (${row}.organization_id, ${hourOf(row)}, 'workflow', ${sign},
    ${sign} * (${row}.status = 'success'), ${sign} * (${row}.status in ('error', 'system_error')),
    ${sign} * (case when ${timed} then ${millis(`${row}.started_at`, `${row}.completed_at`)} else 0 end), ${sign} * (${timed}),
    ${sign} * ${weiHigh(`${row}.gas_used_wei`)}, ${sign} * ${weiLow(`${row}.gas_used_wei`)})
  ${ON_CONFLICT_RUNS};
  insert into network_rollups (organization_id, hour, chain_id, runs, gas_high, gas_low)
  select ${row}.organization_id, ${hourOf(row)}, json_extract(value, '$.chainId'), ${sign}, ${sign} * sum(${weiHigh(txGas)}), ${sign} * sum(${weiLow(txGas)})
  from ${txs} where json_extract(value, '$.chainId') is not null group by 3
  ${ON_CONFLICT_NETWORKS};`;
}

function directContribution(row: 'NEW' | 'OLD', sign: 1 | -1): string {
  return `
  insert into run_rollups (organization_id, hour, source, runs, ok, failed, duration_sum, duration_count, gas_high, gas_low)
  values (${row}.organization_id, ${hourOf(row)}, 'direct', ${sign},
    ${sign} * (${row}.status = 'completed'), ${sign} * (${row}.status = 'failed'),
    ${sign} * (case when ${row}.completed_at is not null then ${millis(`${row}.created_at`, `${row}.completed_at`)} else 0 end), ${sign} * (${row}.completed_at is not null),
    ${sign} * ${weiHigh(`${row}.gas_used_wei`)}, ${sign} * ${weiLow(`${row}.gas_used_wei`)})
  ${ON_CONFLICT_RUNS};
  insert into network_rollups (organization_id, hour, chain_id, runs, gas_high, gas_low)
  values (${row}.organization_id, ${hourOf(row)}, ${row}.chain_id, ${sign}, ${sign} * ${weiHigh(`${row}.gas_used_wei`)}, ${sign} * ${weiLow(`${row}.gas_used_wei`)})
  ${ON_CONFLICT_NETWORKS};`;
}

const COUNTED = {
  workflow_executions: ['organization_id', 'created_at', 'status', 'started_at', 'completed_at', 'gas_used_wei', 'transaction_hashes'],
  direct_executions: ['organization_id', 'created_at', 'status', 'chain_id', 'completed_at', 'gas_used_wei'],
};

async function rollupTriggers(db: Kysely<any>, table: keyof typeof COUNTED, contribution: typeof workflowContribution): Promise<void> {
  await sql.raw(`create trigger ${table}_rollup_insert after insert on ${table} begin ${contribution('NEW', 1)} end`).execute(db);
  await sql.raw(`create trigger ${table}_rollup_delete after delete on ${table} begin ${contribution('OLD', -1)} end`).execute(db);
  await sql
    .raw(
      `create trigger ${table}_rollup_update after update of ${COUNTED[table].join(', ')} on ${table} begin ${contribution('OLD', -1)} ${contribution('NEW', 1)} end`,
    )
    .execute(db);
}

export async function up(db: Kysely<any>): Promise<void> {
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
    .addColumn('duration_sum', 'real', (c) => c.notNull())
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
  await rollupTriggers(db, 'workflow_executions', workflowContribution);
  await rollupTriggers(db, 'direct_executions', directContribution);

  // Runs stored before this migration, counted once.
  await sql`insert into run_rollups (organization_id, hour, source, runs, ok, failed, duration_sum, duration_count, gas_high, gas_low)
    select organization_id, ${sql.raw(hourOf('r'))}, 'workflow', count(*), sum(status = 'success'), sum(status in ('error', 'system_error')),
      sum(case when started_at is not null and completed_at is not null then ${sql.raw(millis('started_at', 'completed_at'))} else 0 end),
      sum(started_at is not null and completed_at is not null), sum(${sql.raw(weiHigh('gas_used_wei'))}), sum(${sql.raw(weiLow('gas_used_wei'))})
    from workflow_executions r group by 1, 2`.execute(db);
  await sql`insert into run_rollups (organization_id, hour, source, runs, ok, failed, duration_sum, duration_count, gas_high, gas_low)
    select organization_id, ${sql.raw(hourOf('r'))}, 'direct', count(*), sum(status = 'completed'), sum(status = 'failed'),
      sum(case when completed_at is not null then ${sql.raw(millis('created_at', 'completed_at'))} else 0 end),
      sum(completed_at is not null), sum(${sql.raw(weiHigh('gas_used_wei'))}), sum(${sql.raw(weiLow('gas_used_wei'))})
    from direct_executions r group by 1, 2`.execute(db);
  const txGas = `json_extract(tx.value, '$.gasUsedWei')`;
  await sql`insert into network_rollups (organization_id, hour, chain_id, runs, gas_high, gas_low)
    select organization_id, hour, chain_id, sum(runs), sum(gas_high), sum(gas_low) from (
      select r.organization_id, ${sql.raw(hourOf('r'))} as hour, json_extract(tx.value, '$.chainId') as chain_id, count(distinct r.id) as runs,
        sum(${sql.raw(weiHigh(txGas))}) as gas_high, sum(${sql.raw(weiLow(txGas))}) as gas_low
      from workflow_executions r, json_each(case when json_valid(r.transaction_hashes) then r.transaction_hashes else '[]' end) tx
      where json_extract(tx.value, '$.chainId') is not null group by 1, 2, 3
      union all
      select organization_id, ${sql.raw(hourOf('r'))}, chain_id, count(*), sum(${sql.raw(weiHigh('gas_used_wei'))}), sum(${sql.raw(weiLow('gas_used_wei'))})
      from direct_executions r group by 1, 2, 3
    ) group by 1, 2, 3`.execute(db);
}
