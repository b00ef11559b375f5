import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.ts';
import { startTestGateway } from './helpers/gateway.ts';
import { KEY_RECHECK_MS } from '../src/auth/keys.ts';

/** `flowgate keys list|revoke` as the host operator runs them, against the database of a running gateway. */

describe('flowgate keys list / revoke', { timeout: 180_000 }, () => {
  it('lists keys with revoked ones, revokes by id (audited as cli), and the running gateway refuses the key within KEY_RECHECK_MS', async () => {
    const gw = await startTestGateway();
    try {
      const env = { FLOWGATE_DATA_DIR: gw.dataDir };
      const key = await gw.createKey({ name: 'ci-bot' });
      const probe = () => fetch(`${gw.url}/api/keys`, { headers: { authorization: `Bearer ${key}` } });
      const body = await (await probe()).json();
      const keyId = body.key.id as string;

      const listed = await runCli(['keys', 'list', '--json'], env);
      expect(listed.code).toBe(0);
      const keys = JSON.parse(listed.stdout);
      expect(keys.find((k: { id: string }) => k.id === keyId)).toMatchObject({ name: 'ci-bot', prefix: key.slice(0, 12), revokedAt: null });
      expect(listed.stdout).not.toContain(key);

      const revoked = await runCli(['keys', 'revoke', keyId], env);
      expect(revoked.code).toBe(0);
      expect(revoked.stdout).toContain(`Revoked key ${keyId}`);
      const revokedAt = Date.now();
      // Another process revoked it: the gateway honours its cached principal for at most KEY_RECHECK_MS.
      await new Promise((r) => setTimeout(r, Math.max(0, KEY_RECHECK_MS + 100 - (Date.now() - revokedAt))));
      expect((await probe()).status).toBe(401);

      const table = await runCli(['keys', 'list'], env);
      expect(table.stdout).toMatch(new RegExp(`${keyId}.*ci-bot.*\\d{4}-\\d{2}-\\d{2}T.*Z\\s*$`, 'm'));

      const audit = await gw.gateway.services.store
        .selectFrom('audit_log')
        .selectAll()
        .where('action', '=', 'key_revoked')
        .where('target', '=', keyId)
        .executeTakeFirstOrThrow();
      expect(audit).toMatchObject({ actor_kind: 'cli', actor_user_id: null, outcome: 'success' });

      const again = await runCli(['keys', 'revoke', keyId], env);
      expect(again.code).toBe(0);
      expect(again.stdout).toContain('already revoked');
      const unknown = await runCli(['keys', 'revoke', 'nope'], env);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toContain('No API key "nope"');
      expect((await runCli(['keys', 'revoke'], env)).code).toBe(2);
    } finally {
      await gw.close();
    }
  });
});
