import fs from 'node:fs';
import path from 'node:path';

/**
 * What a SQLite `database` integration may open and run. better-sqlite3 has
 * no sqlite3_set_authorizer, so the guard is: one directory chosen by the
 * operator (real paths, never the data directory), read-only connections
 * unless the integration sets `allowWrites`, and an allow-list of statement
 * kinds checked before prepare (ATTACH, DETACH, VACUUM, PRAGMA, ... never
 * run). better-sqlite3 itself refuses multi-statement strings, keeps the
 * load_extension() SQL function off and runs in SQLite's defensive mode.
 */

export const SQLITE_DIR_VARIABLE = 'FLOWGATE_SQLITE_INTEGRATION_DIR';

export const SQLITE_DISABLED = `The sqlite database driver is off on this gateway: the operator enables it by setting ${SQLITE_DIR_VARIABLE} to the directory SQLite integrations may open.`;

/**
 * The one answer for a path that is missing, not a file, not an SQLite
 * database, outside the directory (also through a symlink) or in the data
 * directory: a tenant learns nothing about the file system.
 */
export const SQLITE_PATH_UNAVAILABLE = `No SQLite database this gateway may open at this path: \`path\` must name an existing SQLite database file inside the directory the operator set in ${SQLITE_DIR_VARIABLE} (a relative path is resolved from that directory).`;

/** A refusal whose message is safe to show the tenant as it is. */
export class SqliteGuardError extends Error {}

const HEADER = Buffer.from('SQLite format 3\0', 'latin1');

export function isInside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

function realOrResolved(dir: string): string {
  try {
    return fs.realpathSync(dir);
  } catch {
    return path.resolve(dir);
  }
}

/**
 * The real path of the integration's database file, or SqliteGuardError.
 * Runs at create/update time and again before every query (a symlink may
 * have changed since).
 */
export function resolveSqlitePath(allowedDir: string | undefined, dataDir: string, given: string): string {
  if (allowedDir === undefined) throw new SqliteGuardError(SQLITE_DISABLED);
  const unavailable = () => new SqliteGuardError(SQLITE_PATH_UNAVAILABLE);
  if (given.includes('\0')) throw unavailable();
  // Lexically outside: refused without touching the file system.
  const candidate = path.resolve(allowedDir, given);
  if (!isInside(candidate, allowedDir)) throw unavailable();
  let real: string;
  try {
    real = fs.realpathSync(candidate);
  } catch {
    throw unavailable();
  }
  if (real === allowedDir || !isInside(real, allowedDir) || isInside(real, realOrResolved(dataDir))) throw unavailable();
  try {
    const stat = fs.statSync(real);
    if (!stat.isFile()) throw unavailable();
    if (stat.size > 0) {
      // An empty file is an empty database; anything else must carry SQLite's header.
      const header = Buffer.alloc(HEADER.length);
      const fd = fs.openSync(real, 'r');
      try {
        fs.readSync(fd, header, 0, HEADER.length, 0);
      } finally {
        fs.closeSync(fd);
      }
      if (!header.equals(HEADER)) throw unavailable();
    }
  } catch {
    throw unavailable();
  }
  return real;
}

const READ_STATEMENTS = new Set(['select', 'with', 'values']);
const WRITE_STATEMENTS = new Set(['insert', 'update', 'delete', 'replace', 'create', 'drop', 'alter']);

/** The statement's first keyword, after SQLite's whitespace and comments; '' when there is none. */
export function leadingKeyword(sql: string): string {
  let i = 0;
  for (;;) {
    while (i < sql.length && ' \t\n\f\r'.includes(sql[i])) i++;
    if (sql.startsWith('--', i)) {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? sql.length : end + 1;
    } else if (sql.startsWith('/*', i)) {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? sql.length : end + 2;
    } else break;
  }
  return /^[A-Za-z]+/.exec(sql.slice(i))?.[0].toLowerCase() ?? '';
}

/**
 * Refuses every statement kind outside the allow-list (fail closed: an
 * unknown first word is refused too). SELECT, WITH and VALUES always run;
 * INSERT, UPDATE, DELETE, REPLACE, CREATE, DROP and ALTER only with writes.
 */
export function checkSqliteStatement(sql: string, allowWrites: boolean): void {
  const keyword = leadingKeyword(sql);
  if (READ_STATEMENTS.has(keyword) || (allowWrites && WRITE_STATEMENTS.has(keyword))) return;
  const shown = keyword ? keyword.toUpperCase() : 'this';
  if (!allowWrites && WRITE_STATEMENTS.has(keyword)) {
    throw new SqliteGuardError(
      `${shown} statements need a writable SQLite integration: this one is read-only (set \`allowWrites: true\` in its config to allow INSERT, UPDATE, DELETE, REPLACE, CREATE, DROP and ALTER).`,
    );
  }
  throw new SqliteGuardError(
    `${shown} statements do not run on SQLite integrations: only SELECT, WITH and VALUES${allowWrites ? ', INSERT, UPDATE, DELETE, REPLACE, CREATE, DROP and ALTER' : ''} do (ATTACH, DETACH, VACUUM and PRAGMA never do; read a pragma with \`select * from pragma_table_info('t')\`).`,
  );
}
