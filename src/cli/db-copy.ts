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
  return [password, decodeURIComponent(password)].reduce((text, secret) => text.split(secret).join('***'), message);
}

function describeFailure(error: unknown, url: string, shown: string): string {
  const code = (error as { code?: unknown }).code;
  const detail = (error as Error).message || (typeof code === 'string' ? code : String(error));
  if (isStoreUnreachable(error)) return `cannot reach PostgreSQL at ${shown} (${withoutPassword(detail, url)}): is it running, and is the URL right?`;
  return `${error instanceof CopyRefused ? 'refused' : 'failed'}: ${withoutPassword(detail, url)} (target ${shown})`;
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

  const sqlite = openSqlite(databaseFile(dataDir));
  const source = kyselyOverSqlite(sqlite);
  const target = openPostgresStore(url);
  try {
    const newer = await unknownMigrations(source);
    if (newer.length > 0) {
      console.error(`flowgate: refused: ${dataDir} was written by a newer Flowgate (migrations ${newer.join(', ')}); copy it with that version.`);
      return 1;
    }
    await migrate(source);
    const keyOpens = masterKey && (await masterKeyOpensWallets(source, createSecretBox(masterKey.key)));

    try {
      await sql`select 1`.execute(target.store);
      const taken = await nonEmptyTables(target.store);
      if (taken.length > 0) {
        console.error(
          `flowgate: refused: the target database ${shown} is not empty (rows in ${taken.join(', ')}). ` +
            'db copy only writes into an empty database; nothing was changed.',
        );
        return 1;
      }
      const newerTarget = await unknownMigrations(target.store);
      if (newerTarget.length > 0) throw new CopyRefused(`the target was migrated by a newer Flowgate (migrations ${newerTarget.join(', ')})`);
      await migrate(target.store);
      const running = readAdvertisedBaseUrl(dataDir);
      if (running) console.error(`Note: a gateway may be serving this data directory (${running}); what it writes after this snapshot stays in SQLite.`);
      const copies = await copySqliteToPostgres(sqlite, target.store);
      const rows = copies.reduce((sum, c) => sum + c.target, 0);
      console.log(`Copied ${dataDir} into ${shown}:\n`);
      console.log(
        table(
          ['TABLE', 'SQLITE', 'POSTGRESQL'],
          copies.map((c) => [c.table, String(c.source), String(c.target)]),
        ),
      );
      console.log(`\n${rows} rows in ${copies.length} tables; every count matches. Wallets and credentials were copied sealed, as they were.`);
      console.log(`\nStart every gateway on PostgreSQL with:\n  FLOWGATE_DATABASE_URL=<the --to URL>\n${masterKeyAdvice(dataDir, masterKey?.from)}`);
      if (keyOpens === false) {
        console.error(
          `Warning: the master key in effect here (${masterKey!.from === 'env' ? 'FLOWGATE_MASTER_KEY' : masterKeyFile(dataDir)}) does not open the copied wallets; ` +
            'give the PostgreSQL instances the key the SQLite gateway ran with.',
        );
      }
      return 0;
    } catch (error) {
      console.error(`flowgate: ${describeFailure(error, url, shown)}`);
      return 1;
    }
  } finally {
    await Promise.allSettled([source.destroy(), target.store.destroy()]);
  }
}
