import fs from 'node:fs';
import path from 'node:path';
import { privateKeyToAddress } from 'viem/accounts';
import { Keypair } from '@solana/web3.js';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { openRuntime } from '../src/gateway.ts';
import { migrations } from '../src/store/migrations/index.ts';
import { databaseFile, migrate, openSqliteStore } from '../src/store/db.ts';
import { createSecretBox, loadMasterKey } from '../src/wallets/crypto.ts';
import { tempDir } from './helpers/gateway.ts';

const allMigrations = Object.keys(migrations);

describe('migrations', () => {
  it('build an empty database to the latest version, then do nothing on the next start', async () => {
    const store = openSqliteStore(path.join(tempDir(), 'db.sqlite'));
    expect(await migrate(store)).toEqual(allMigrations);
    expect(await migrate(store)).toEqual([]);
    const tables = (await store.introspection.getTables()).map((t) => t.name);
    expect(tables).toEqual(expect.arrayContaining(['organizations', 'users', 'memberships', 'api_keys', 'wallets', 'abi_cache', 'rate_limits']));
    await store.destroy();
  });

  it('upgrade an existing database without losing its rows', async () => {
    const file = path.join(tempDir(), 'db.sqlite');
    const old = openSqliteStore(file);
    expect(await migrate(old, allMigrations[0])).toEqual([allMigrations[0]]);
    await old.insertInto('organizations').values({ id: 'org1', slug: 'kept', name: 'Kept', created_at: new Date().toISOString() }).execute();
    await old.destroy();

    const upgraded = openSqliteStore(file);
    expect(await migrate(upgraded)).toEqual(allMigrations.slice(1));
    expect(await upgraded.selectFrom('organizations').select('slug').execute()).toEqual([{ slug: 'kept' }]);
    await upgraded.destroy();
  });

  it('run in WAL mode', async () => {
    const dataDir = tempDir();
    const runtime = await openRuntime(loadConfig({ FLOWGATE_DATA_DIR: dataDir }));
    await runtime.close();
    expect(fs.existsSync(databaseFile(dataDir))).toBe(true);
    const header = fs.readFileSync(databaseFile(dataDir)).subarray(18, 20);
    expect([...header]).toEqual([2, 2]); // file format bytes 2 = WAL
  });
});

describe('organization wallets', () => {
  it('are generated locally and sealed with AES-256-GCM under the master key', async () => {
    const dataDir = tempDir();
    const masterKey = 'ab'.repeat(32);
    const runtime = await openRuntime(loadConfig({ FLOWGATE_DATA_DIR: dataDir, FLOWGATE_MASTER_KEY: masterKey }));
    const { organization } = await runtime.services.organizations.ensure('default');
    const row = await runtime.services.store.selectFrom('wallets').selectAll().where('organization_id', '=', organization.id).executeTakeFirstOrThrow();
    await runtime.close();

    // A master key from the environment means no key file is written.
    expect(fs.existsSync(path.join(dataDir, 'master.key'))).toBe(false);
    expect(row.evm_key_encrypted).toMatch(/^v1:/);
    expect(row.evm_key_encrypted).not.toMatch(/0x[0-9a-f]{64}/i);

    const box = createSecretBox(loadMasterKey(dataDir, masterKey));
    const evmKey = box.open(row.evm_key_encrypted, organization.id) as `0x${string}`;
    expect(privateKeyToAddress(evmKey)).toBe(row.evm_address);
    const solana = Keypair.fromSecretKey(Buffer.from(box.open(row.solana_key_encrypted, organization.id), 'base64'));
    expect(solana.publicKey.toBase58()).toBe(row.solana_address);

    // Bound to its organization, and useless under another master key.
    expect(() => box.open(row.evm_key_encrypted, 'another-org')).toThrow();
    expect(() => createSecretBox(Buffer.alloc(32, 7)).open(row.evm_key_encrypted, organization.id)).toThrow();
  });
});
