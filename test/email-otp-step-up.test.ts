import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { browserClient, signIn, type BrowserClient } from './helpers/session.ts';
import { operatorMailerEnv, startProviderServers, type ProviderServers } from './helpers/providers.ts';
import { tokenHash } from '../src/auth/tokens.ts';

/**
 * The e-mail step-up factor: a wallet account adds a real address (behind
 * step-up, confirmed by a mailed link), after which every step-up also asks
 * for the 6-digit code mailed with the challenge. Mail goes to a local server
 * speaking Resend's API; the codes are read from what it received.
 */

let gw: TestGateway;
let fakes: ProviderServers;

beforeAll(async () => {
  fakes = await startProviderServers();
  gw = await startTestGateway({
    env: {
      ...operatorMailerEnv(fakes),
    },
  });
});
afterAll(async () => {
  await gw?.close();
  await fakes?.close();
});
beforeEach(() => void (fakes.resend.received.length = 0));

const mailsTo = (to: string) => fakes.resend.received.filter((r) => r.path === '/emails' && r.body.to.includes(to)).map((r) => r.body);
const codeIn = (text: string) => /confirmation code for \S+ is (\d{6})/.exec(text)?.[1];
let n = 0;

/** A signed-in wallet owner who added and confirmed a real address. */
async function ownerWithEmail() {
  const account = privateKeyToAccount(generatePrivateKey());
  const client = browserClient(gw.url);
  const me = await signIn(client, gw.url, account);
  const email = `owner${Date.now()}${n++}@example.com`;
  const first = await client.fetch('/api/user/email', { method: 'POST', json: { email } });
  expect(first.status).toBe(401);
  expect(first.body).toMatchObject({ code: 'signature_required', required: ['wallet'] });
  const signature = await account.signMessage({ message: first.body.challenge });
  const requested = await client.fetch('/api/user/email', { method: 'POST', json: { email, signature } });
  expect(requested.status, JSON.stringify(requested.body)).toBe(200);
  const link = /(http\S+\/api\/auth\/verify-email\?token=\S+)/.exec(mailsTo(email).at(-1)!.text)![1]!;
  // Followed from the mailbox: it confirms the address and signs nobody in.
  const mailbox = browserClient(gw.url, { origin: null });
  const confirmed = await mailbox.fetch(link);
  expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
  expect(confirmed.body).toMatchObject({ user: { id: me.user.id, email }, session: null });
  expect(confirmed.headers.get('set-cookie')).toBeNull();
  expect((await mailbox.fetch('/api/auth/session')).status).toBe(401);
  return { account, client, me, email };
}

const createKey = (client: BrowserClient, body: Record<string, unknown> = {}) =>
  client.fetch('/api/keys', { method: 'POST', json: { name: 'agent', ...body } });

describe('emailOtp step-up factor', () => {
  it('a wallet account without a real address is asked for the wallet only', async () => {
    const client = browserClient(gw.url);
    await signIn(client, gw.url, privateKeyToAccount(generatePrivateKey()));
    const res = await createKey(client);
    expect(res.status).toBe(401);
    expect(res.body.required).toEqual(['wallet']);
  });

  it('with a confirmed address, the challenge lists emailOtp and mails a code; signature plus that code passes', async () => {
    const { account, client, me, email } = await ownerWithEmail();
    fakes.resend.received.length = 0;
    const first = await createKey(client);
    expect(first.status).toBe(401);
    expect(first.body).toMatchObject({ code: 'signature_required', required: ['wallet', 'emailOtp'] });
    const code = codeIn(mailsTo(email).at(-1)!.text)!;
    expect(code).toMatch(/^\d{6}$/);
    // Only a hash, bound to the challenge, is stored.
    const row = await gw.gateway.services.store
      .selectFrom('step_up_challenges')
      .selectAll()
      .where('user_id', '=', me.user.id)
      .where('used_at', 'is', null)
      .executeTakeFirstOrThrow();
    expect(row.email_code_hash).not.toBe(tokenHash(code));
    expect(JSON.stringify(row)).not.toContain(code);

    const signature = await account.signMessage({ message: first.body.challenge });
    const created = await createKey(client, { signature, emailOtp: code });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.key).toMatch(/^svc_/);
  });

  it('a missing or wrong code is factors_required with a fresh challenge and a fresh code; the old code is spent', async () => {
    const { account, client, email } = await ownerWithEmail();
    const first = await createKey(client);
    const oldCode = codeIn(mailsTo(email).at(-1)!.text)!;
    const noCode = await createKey(client, { signature: await account.signMessage({ message: first.body.challenge }) });
    expect(noCode.status).toBe(401);
    expect(noCode.body).toMatchObject({ code: 'factors_required', required: ['wallet', 'emailOtp'], missing: ['emailOtp'] });
    expect(noCode.body.challenge).not.toBe(first.body.challenge);
    const newCode = codeIn(mailsTo(email).at(-1)!.text)!;

    const wrong = String((Number(newCode) + 1) % 1_000_000).padStart(6, '0');
    const bad = await createKey(client, { signature: await account.signMessage({ message: noCode.body.challenge }), emailOtp: wrong });
    expect(bad.status).toBe(401);
    expect(bad.body.code).toBe('factors_required');
    const latest = codeIn(mailsTo(email).at(-1)!.text)!;

    // The first code does not answer a later challenge (unless it happens to be the same six digits).
    if (oldCode !== latest) {
      const stale = await createKey(client, { signature: await account.signMessage({ message: bad.body.challenge }), emailOtp: oldCode });
      expect(stale.body.code).toBe('factors_required');
      const retry = await createKey(client, {
        signature: await account.signMessage({ message: stale.body.challenge }),
        emailOtp: codeIn(mailsTo(email).at(-1)!.text)!,
      });
      expect(retry.status).toBe(201);
    } else {
      const ok = await createKey(client, { signature: await account.signMessage({ message: bad.body.challenge }), emailOtp: latest });
      expect(ok.status).toBe(201);
    }
  });

  it('once confirmed, the address is a factor of changing it too', async () => {
    const { client, email } = await ownerWithEmail();
    const again = await client.fetch('/api/user/email', { method: 'POST', json: { email: 'other@example.com' } });
    // The confirmed address is now a factor of this very step-up.
    expect(again.body).toMatchObject({ code: 'signature_required', required: ['wallet', 'emailOtp'] });
    expect(codeIn(mailsTo(email).at(-1)!.text)).toMatch(/^\d{6}$/);
  });
});
