import { describe, expect, it } from 'vitest';

import { runCli } from './helpers/cli.ts';
import { fetchJson, openTestStoreFor, startTestGateway } from './helpers/gateway.ts';

/**
 * One database, one master key: an instance (or a CLI) started with another
 * key than the one that sealed the database's wallets is refused at start,
 * saying which setting to fix and never printing either key.
 */

const KEY_A = 'a1'.repeat(32);
const KEY_B = 'b2'.repeat(32);

describe('the master key check', { timeout: 120_000 }, () => {
  it('refuses a gateway or CLI with another key than the one that sealed the database, and accepts the right one', async () => {
    const first = await startTestGateway({ env: { FLOWGATE_MASTER_KEY: KEY_A } });
    const wallet = await fetchJson(`${first.url}/api/user/wallet`, { key: first.ownerKey });
    expect(wallet.status, JSON.stringify(wallet.body)).toBe(200);
    const dataDir = first.dataDir;
    await first.close();

    const refused = startTestGateway({ dataDir, env: { FLOWGATE_MASTER_KEY: KEY_B } });
    await expect(refused).rejects.toThrow(/different master key.*FLOWGATE_MASTER_KEY/s);
    await refused.catch((error: Error) => {
      expect(error.message).not.toContain(KEY_A);
      expect(error.message).not.toContain(KEY_B);
    });

    const cli = await runCli(['keys', 'list'], { FLOWGATE_DATA_DIR: dataDir, FLOWGATE_MASTER_KEY: KEY_B });
    expect(cli.code).not.toBe(0);
    expect(cli.stderr).toMatch(/different master key/);
    expect(cli.stderr + cli.stdout).not.toContain(KEY_B);
    expect((await runCli(['keys', 'list'], { FLOWGATE_DATA_DIR: dataDir, FLOWGATE_MASTER_KEY: KEY_A })).code).toBe(0);

    const again = await startTestGateway({ dataDir, env: { FLOWGATE_MASTER_KEY: KEY_A } });
    const same = await fetchJson(`${again.url}/api/user/wallet`, { key: again.ownerKey });
    expect(same.body).toEqual(wallet.body);
    await again.close();
  });

  it('a database from before the check is judged by its wallets: the sealing key is recorded, another is refused', async () => {
    const first = await startTestGateway({ env: { FLOWGATE_MASTER_KEY: KEY_A } });
    expect((await fetchJson(`${first.url}/api/user/wallet`, { key: first.ownerKey })).status).toBe(200);
    const dataDir = first.dataDir;
    await first.close();
    // As an older Flowgate left it: wallets, no recorded check.
    const store = await openTestStoreFor(dataDir);
    await store.deleteFrom('store_settings').execute();
    await store.destroy();

    await expect(startTestGateway({ dataDir, env: { FLOWGATE_MASTER_KEY: KEY_B } })).rejects.toThrow(/different master key/);
    const accepted = await startTestGateway({ dataDir, env: { FLOWGATE_MASTER_KEY: KEY_A } });
    const recorded = await accepted.gateway.services.store.selectFrom('store_settings').selectAll().execute();
    expect(recorded).toEqual([{ name: 'master_key_check', value: expect.stringMatching(/^[0-9a-f]{64}$/) }]);
    expect(JSON.stringify(recorded)).not.toContain(KEY_A);
    await accepted.close();
  });
});
