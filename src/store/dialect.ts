import { PostgresAdapter, sql, type Kysely, type RawBuilder } from 'kysely';

/**
 * SQL fragments that SQLite and PostgreSQL spell differently, for the
 * analytics rollups (migration 016) and src/analytics. Each takes and returns
 * SQL text over trusted column expressions (never user input). Times are
 * stored as ISO-8601 text; wei amounts as decimal text.
 */
export interface SqlDialect {
  postgres: boolean;
  /** Whole seconds since the epoch of an ISO timestamp. */
  epochSeconds(iso: string): string;
  /** Milliseconds from one ISO timestamp to another, as a float. */
  millisBetween(from: string, to: string): string;
  /** The digits of a decimal wei text above 1e9, as an integer (0 when null or empty). */
  weiHigh(wei: string): string;
  /** The last nine digits of a decimal wei text, as an integer (0 when null). */
  weiLow(wei: string): string;
  /** A JSON object's field as text (strings) or number. */
  jsonField(json: string, field: string): string;
  /** A JSON object's field as an integer. */
  jsonInteger(json: string, field: string): string;
  /** A from-item: the elements of a JSON array text as rows of `alias.value`; unreadable JSON gives none. */
  jsonArrayRows(jsonText: string, alias: string): string;
}

export const isPostgres = (db: Kysely<any>): boolean => db.getExecutor().adapter instanceof PostgresAdapter;

/**
 * `table` as a from-item that reads through `index` on SQLite (INDEXED BY).
 * SQLite plans without statistics and prefers the (status, lease) index of
 * runs for any filter on status, which reads every run of that status where a
 * partial index reads a handful. PostgreSQL plans by its own statistics.
 */
export const readVia = (db: Kysely<any>, table: string, index: string): RawBuilder<unknown> =>
  isPostgres(db) ? sql`${sql.table(table)}` : sql`${sql.table(table)} indexed by ${sql.ref(index)}`;

const sqlite: SqlDialect = {
  postgres: false,
  epochSeconds: (iso) => `cast(strftime('%s', ${iso}) as integer)`,
  millisBetween: (from, to) => `((julianday(${to}) - julianday(${from})) * 86400000.0)`,
  weiHigh: (wei) => `coalesce(cast(substr(${wei}, 1, length(${wei}) - 9) as integer), 0)`,
  weiLow: (wei) => `coalesce(cast(substr(${wei}, max(length(${wei}) - 8, 1)) as integer), 0)`,
  jsonField: (json, field) => `json_extract(${json}, '$.${field}')`,
  jsonInteger: (json, field) => `json_extract(${json}, '$.${field}')`,
  jsonArrayRows: (text, alias) => `json_each(case when json_valid(${text}) then ${text} else '[]' end) ${alias}`,
};

// PostgreSQL refuses what SQLite quietly reads as 0 (a negative substring length, '' or non-digits cast to an
// integer): a wei that is not plain digits counts as 0 rather than failing the engine's write in a trigger.
const digits = (wei: string) => `(${wei} ~ '^[0-9]+$')`;

const postgres: SqlDialect = {
  postgres: true,
  epochSeconds: (iso) => `floor(extract(epoch from (${iso})::timestamptz))::bigint`,
  millisBetween: (from, to) => `(extract(epoch from ((${to})::timestamptz - (${from})::timestamptz)) * 1000.0)::double precision`,
  weiHigh: (wei) => `(case when ${digits(wei)} and length(${wei}) > 9 then left(${wei}, length(${wei}) - 9)::bigint else 0 end)`,
  weiLow: (wei) => `(case when ${digits(wei)} then right(${wei}, 9)::bigint else 0 end)`,
  jsonField: (json, field) => `(${json} ->> '${field}')`,
  jsonInteger: (json, field) => `(case when (${json} ->> '${field}') ~ '^-?[0-9]+$' then (${json} ->> '${field}')::bigint end)`,
  jsonArrayRows: (text, alias) => `jsonb_array_elements(flowgate_json_array(${text})) ${alias}(value)`,
};

/**
 * PostgreSQL's JSON cast throws on unreadable text; this function (created by
 * migration 016) reads it as an empty array instead, like SQLite's json_valid guard.
 */
export const POSTGRES_JSON_ARRAY_FUNCTION = `create function flowgate_json_array(input text) returns jsonb language plpgsql immutable as $$
begin
  if input is null then return '[]'::jsonb; end if;
  return case when jsonb_typeof(input::jsonb) = 'array' then input::jsonb else '[]'::jsonb end;
exception when others then
  return '[]'::jsonb;
end $$`;

export const dialectOf = (db: Kysely<any>): SqlDialect => (isPostgres(db) ? postgres : sqlite);
