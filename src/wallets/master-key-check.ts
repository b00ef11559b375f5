import { createHmac } from 'node:crypto';
import type { Store } from '../store/db.ts';
import type { SecretBox } from './crypto.ts';
import { masterKeyOpensWallets } from './wallets.ts';

/**
 * Every instance on one database must seal and open with the same master key.
 * The first start records a keyed digest of its key (HMAC: it reveals nothing
 * of the key); a later start with another key is refused with the fix, before
 * it could seal a wallet the others cannot open or fail on one they sealed.
 */

const CHECK = 'master_key_check';

const fingerprint = (masterKey: Buffer) => createHmac('sha256', masterKey).update('flowgate master key check v1').digest('hex');

export class MasterKeyMismatch extends Error {}

const mismatch = (dataDir: string) =>
  new MasterKeyMismatch(
    'This database was sealed with a different master key: its wallets and credentials cannot be opened with the key this process uses. ' +
      `Give every instance the same FLOWGATE_MASTER_KEY (64 hex characters); the embedded default keeps it in ${dataDir}/master.key of the first instance, or of the SQLite data directory the database was copied from.`,
  );

export async function checkMasterKey(store: Store, masterKey: Buffer, box: SecretBox, dataDir: string): Promise<void> {
  const mine = fingerprint(masterKey);
  const recorded = await store.selectFrom('store_settings').select('value').where('name', '=', CHECK).executeTakeFirst();
  if (recorded) {
    if (recorded.value !== mine) throw mismatch(dataDir);
    return;
  }
  // A database from before the check: its wallets say which key sealed them.
  if ((await masterKeyOpensWallets(store, box)) === false) throw mismatch(dataDir);
  await store
    .insertInto('store_settings')
    .values({ name: CHECK, value: mine })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  // Another instance may have recorded its own key first.
  const settled = await store.selectFrom('store_settings').select('value').where('name', '=', CHECK).executeTakeFirstOrThrow();
  if (settled.value !== mine) throw mismatch(dataDir);
}
