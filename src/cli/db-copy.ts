import path from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import type { Config } from '../config.ts';
import { readAdvertisedBaseUrl } from '../advertised-base-url.ts';
import { copySqliteToPostgres, CopyRefused, nonEmptyTables } from '../store/copy.ts';
import { databaseFile, isStoreUnreachable, kyselyOverSqlite, migrate, openSqlite, unknownMigrations } from '../store/db.ts';
import { describePostgresUrl, openPostgresStore } from '../store/postgres.ts';
import { createSecretBox, masterKeyFile, readMasterKey } from '../wallets/crypto.ts';
import { masterKeyOpensWallets } from '../wallets/wallets.ts';
import { table } from './format.ts';
import { requireSqliteDatabase } from './keys.ts';
import { UsageError } from './usage.ts';

/**
 * `flowgate db copy --to postgres://…`: moves an SQLite data directory into an
 * empty PostgreSQL database (src/store/copy.ts does the copying). The URL's
 * password is never printed: the target is shown as user@host:port/database,
 * and any message from the server or driver has the password taken out.
 */

const URL_HELP = 'postgres://USER:PASSWORD@HOST:5432/DATABASE';

/** A message from pg or the network with the URL's password (plain or percent-encoded) blanked out. */
function withoutPassword(message: string, url: string): string {
  let password = '';
  try {
    password = new URL(url).password;
  } catch {
    // describePostgresUrl already accepted it; nothing to blank otherwise.
  }
  if (!password) return message;
  let decoded = password;
  try {
    decoded = decodeURIComponent(password);
  } catch {
    // A stray % is kept as typed.
  }
  return [password, decoded].reduce((text, secret) => text.split(secret).join('***'), message);
}

function describeFailure(error: unknown, url: string, shown: string): string {
  const code = (error as { code?: unknown }).code;
  const detail = (error as Error).message || (typeof code === 'string' ? code : String(error));
  if (isStoreUnreachable(error)) return `cannot reach PostgreSQL at ${shown} (${withoutPassword(detail, url)}): is it running, and is the URL right?`;
  return `${error instanceof CopyRefused ? 'refused' : 'failed'}: ${withoutPassword(detail, url)} (target ${shown}; nothing was copied)`;
}

/** What the PostgreSQL instances need to open the copied wallets and credentials; the key itself is never printed. */
function masterKeyAdvice(dataDir: string, from: 'env' | 'file' | undefined): string {
  if (from === 'env') return '  FLOWGATE_MASTER_KEY=<the same value as now>';
  if (from === 'file')
    return `  FLOWGATE_MASTER_KEY=<the 64 hex characters in ${masterKeyFile(dataDir)}>, e.g. "$(cat ${JSON.stringify(masterKeyFile(dataDir))})"`;
  return '  FLOWGATE_MASTER_KEY=<the key the SQLite gateway ran with> (none was found: no FLOWGATE_MASTER_KEY, no master.key in the data directory)';
}

export async function dbCopy(config: Config, args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { to: { type: 'string' }, 'data-dir': { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length > 0) throw new UsageError(`db copy takes no positional arguments; usage: flowgate db copy --to ${URL_HELP} [--data-dir DIR]`);
  if (!values.to) throw new UsageError(`db copy needs --to ${URL_HELP} (an empty PostgreSQL database)`);
  const url = values.to.trim();
  const shown = describePostgresUrl(url);
  if (!shown) throw new UsageError(`--to must be a postgres:// or postgresql:// URL such as ${URL_HELP} (value not shown: it may hold a password)`);
  const dataDir = path.resolve(values['data-dir'] ?? config.dataDir);
  requireSqliteDatabase(dataDir, 'Pass --data-dir DIR or set FLOWGATE_DATA_DIR');
  const masterKey = readMasterKey(dataDir, config.masterKey);

  const sqlite = openSqlite(databaseFile(dataDir), 'pass --data-dir DIR (or set FLOWGATE_DATA_DIR) naming the directory that holds the data to copy');
  const source = kyselyOverSqlite(sqlite);
  const target = openPostgresStore(url);
  const refuse = (reason: string) => {
    console.error(`flowgate: refused: ${reason}; nothing was written to ${shown}.`);
    return 1;
  };
  try {
    const newer = await unknownMigrations(source);
    if (newer.length > 0) return refuse(`${dataDir} was written by a newer Flowgate (migrations ${newer.join(', ')}); copy it with that version`);
    await migrate(source);
    // Fail closed: copied under a key that does not open them, the wallets would be lost to every PostgreSQL instance.
    if ((await masterKeyOpensWallets(source, masterKey && createSecretBox(masterKey.key))) === false) {
      return refuse(
        masterKey
          ? `the master key in effect (${masterKey.from === 'env' ? 'FLOWGATE_MASTER_KEY' : masterKeyFile(dataDir)}) does not open the wallets in ${dataDir}; ` +
              'run db copy with the key the gateway on this data directory ran with'
          : `${dataDir} holds wallets but no master.key, and FLOWGATE_MASTER_KEY is unset; set it to the key the gateway ran with`,
      );
    }

    try {
      await sql`select 1`.execute(target.store);
      const taken = await nonEmptyTables(target.store);
      if (taken.length > 0)
        return refuse(`the target database ${shown} is not empty (rows in ${taken.join(', ')}); db copy only writes into an empty database`);
      const newerTarget = await unknownMigrations(target.store);
      if (newerTarget.length > 0) return refuse(`the target database was migrated by a newer Flowgate (migrations ${newerTarget.join(', ')})`);
      await migrate(target.store);
      const running = readAdvertisedBaseUrl(dataDir);
      if (running) console.error(`Note: a gateway may be serving this data directory (${running}); what it writes after this snapshot stays in SQLite.`);
      const copies = await copySqliteToPostgres(sqlite, target.store);
      const rows = copies.reduce((sum, c) => sum + c.target, 0);
      const byName = [...copies].sort((a, b) => a.table.localeCompare(b.table));
      console.log(`Copied ${dataDir} into ${shown}:\n`);
      console.log(
        table(
          ['TABLE', 'SQLITE', 'POSTGRESQL'],
          byName.map((c) => [c.table, String(c.source), String(c.target)]),
        ),
      );
      console.log(`\n${rows} rows in ${copies.length} tables, in one transaction; every count matches. Wallets and credentials stay sealed.`);
      console.log(`\nStart every gateway on PostgreSQL with:\n  FLOWGATE_DATABASE_URL=<the --to URL>\n${masterKeyAdvice(dataDir, masterKey?.from)}`);
      return 0;
    } catch (error) {
      console.error(`flowgate: ${describeFailure(error, url, shown)}`);
      return 1;
    }
  } finally {
    await Promise.allSettled([source.destroy(), target.store.destroy()]);
  }
}
