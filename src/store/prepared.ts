import type { Compilable, CompiledQuery, Kysely, QueryResult } from 'kysely';

/**
 * Hot queries (the engine's few per step, hundreds per For Each run; key lookups),
 * built and compiled by Kysely once per database handle and then run with
 * fresh parameters. Building and compiling a Kysely query costs several times
 * more than SQLite takes to run it; the SQL stays Kysely's, so it is the
 * store's own dialect (SQLite or PostgreSQL) either way.
 *
 * `build` receives stand-ins for its arguments: it must use each only as a
 * value (a column value or a comparison operand), never to choose the
 * query's shape, since it runs once. An insert of a whole row passes
 * `columns` (every key of the row type, checked by the compiler) so the
 * stand-in row has them all.
 */

/** Stands for one argument while the query is compiled; found again by identity in the parameters. */
class Slot {
  constructor(readonly name: string) {}
}

interface Entry {
  compiled: CompiledQuery;
  /** Per parameter: the argument that fills it, or undefined for a constant written in the query. */
  names: (string | undefined)[];
}

export interface Prepared<Args, Row> {
  /** Runs on `via` (a transaction of `db`) when given; compiled once per `db`. */
  (db: Kysely<any>, args: Args, via?: Kysely<any>): Promise<QueryResult<Row>>;
}

export function prepared<Args extends object, Row = unknown>(
  build: (db: Kysely<any>, args: Args) => Compilable<Row>,
  columns?: Record<keyof Args, true>,
): Prepared<Args, Row> {
  // Per database handle: a transaction or another store may compile differently.
  const cache = new WeakMap<Kysely<any>, Entry>();
  return (db, args, via = db) => {
    let entry = cache.get(db);
    if (!entry) {
      const slots = (
        columns
          ? Object.fromEntries(Object.keys(columns).map((name) => [name, new Slot(name)]))
          : new Proxy({}, { get: (_target, name) => new Slot(String(name)) })
      ) as Args;
      const compiled = build(db, slots).compile();
      entry = { compiled, names: compiled.parameters.map((p) => (p instanceof Slot ? p.name : undefined)) };
      cache.set(db, entry);
    }
    const { compiled, names } = entry;
    const parameters = names.map((name, i) => (name === undefined ? compiled.parameters[i] : (args as Record<string, unknown>)[name]));
    // The query id only keys plugin state across one execution; no plugin is configured on the store.
    return via.executeQuery<Row>({ ...compiled, parameters });
  };
}

/** The first row of a prepared select (or `returning`), if any. */
export async function first<Args, Row>(query: Prepared<Args, Row>, db: Kysely<any>, args: Args, via?: Kysely<any>): Promise<Row | undefined> {
  return (await query(db, args, via)).rows[0];
}

/** Rows changed by a prepared insert, update or delete. */
export async function changed<Args, Row>(query: Prepared<Args, Row>, db: Kysely<any>, args: Args, via?: Kysely<any>): Promise<number> {
  return Number((await query(db, args, via)).numAffectedRows ?? 0n);
}
