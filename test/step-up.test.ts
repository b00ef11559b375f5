import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { generate as totpCode } from 'otplib';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { browserClient, signIn, type BrowserClient } from './helpers/session.ts';
import { tokenHash } from '../src/auth/tokens.ts';

/** Step-up (SPEC Authentication rule 8) through POST /api/keys and DELETE /api/user/totp, over real HTTP with real signatures. */

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => gw.close());

const newAccount = () => privateKeyToAccount(generatePrivateKey());

async function signedInOwner() {
  const account = newAccount();
  const client = browserClient(gw.url);
  const me = await signIn(client, gw.url, account);
  return { account, client, me };
}

const createKey = (client: BrowserClient, body: Record<string, unknown> = {}) =>
  client.fetch('/api/keys', { method: 'POST', json: { name: 'agent', ...body } });

const auditRows = (userId: string, action: string) =>
  gw.gateway.services.store.selectFrom('audit_log').selectAll().where('actor_user_id', '=', userId).where('action', '=', action).execute();

describe('step-up with the wallet factor', () => {
  it('challenge, signature, key: the whole round trip; the challenge text names action, request, user, organization and nonce', async () => {
    const { account, client, me } = await signedInOwner();
    const first = await createKey(client, { scope: 'mcp:read' });
    expect(first.status).toBe(401);
    expect(first.body).toMatchObject({ code: 'signature_required', required: ['wallet'] });
    const challenge = first.body.challenge as string;
    expect(challenge).toContain('Action: org_api_key_manage');
    // The wallet shows what it authorizes: the request's fields, and a hash binding them.
    expect(challenge).toContain('Request: {"name":"agent","scope":"mcp:read"}');
    expect(challenge).toMatch(/Request SHA-256: [0-9a-f]{64}/);
    expect(challenge).toContain(account.address);
    expect(challenge).toContain(me.organization.id);
    expect(challenge).toMatch(/Nonce: \S{20,}/);
    // Stored hashed: the row holds the challenge's SHA-256, not its text.
    const row = await gw.gateway.services.store.selectFrom('step_up_challenges').selectAll().where('user_id', '=', me.user.id).executeTakeFirstOrThrow();
    expect(row.challenge_hash).toBe(tokenHash(challenge));
    expect(JSON.stringify(row)).not.toContain(challenge);
    expect(Date.parse(row.expires_at) - Date.parse(row.created_at)).toBe(5 * 60_000);

    const signature = await account.signMessage({ message: challenge });
    const created = await createKey(client, { signature, scope: 'mcp:read' });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^svc_/);
    expect(created.body).toMatchObject({ name: 'agent', scope: 'mcp:read', revokedAt: null });
    // The new key works as a bearer key of this organization.
    const probe = await fetch(`${gw.url}/api/keys`, { headers: { authorization: `Bearer ${created.body.key}` } });
    expect(probe.status).toBe(200);
    expect((await probe.json()).organization.id).toBe(me.organization.id);

    expect(await auditRows(me.user.id, 'step_up_succeeded')).toHaveLength(1);
    const [audit] = await auditRows(me.user.id, 'key_created');
    expect(audit!.target).toBe(created.body.id);
    expect(JSON.stringify(audit)).not.toContain(created.body.key);
    expect(JSON.stringify(audit)).not.toContain(signature);
  });

  it('a signature answers only the request its challenge was minted for: another scope, or revoking instead of creating, is refused', async () => {
    const { account, client, me } = await signedInOwner();
    // Minted for a read-only key; answered with a request for a full-scope key.
    const { challenge } = (await createKey(client, { scope: 'mcp:read' })).body;
    const signature = await account.signMessage({ message: challenge });
    const widened = await createKey(client, { signature });
    expect(widened.status).toBe(401);
    expect(widened.body.code).toBe('wallet_signature_invalid');
    expect(widened.body.error).toContain('the challenge was issued for a different request');
    expect(widened.body).not.toHaveProperty('challenge');
    // The same action name covers revocation: a challenge minted to create a key does not revoke one.
    const keep = await createKey(client, { scope: 'mcp:read' });
    const kept = await createKey(client, { scope: 'mcp:read', signature: await account.signMessage({ message: keep.body.challenge }) });
    expect(kept.status).toBe(201);
    const { challenge: forCreate } = (await createKey(client, { name: 'other' })).body;
    const revoke = await client.fetch(`/api/keys/${kept.body.id}`, {
      method: 'DELETE',
      json: { signature: await account.signMessage({ message: forCreate }) },
    });
    expect(revoke.status).toBe(401);
    expect(revoke.body.code).toBe('wallet_signature_invalid');
    const listed = await client.fetch('/api/keys/list');
    expect(listed.body.find((k: { id: string }) => k.id === kept.body.id)).toMatchObject({ revokedAt: null });
    expect((await auditRows(me.user.id, 'step_up_failed')).length).toBe(2);
  });

  it('a used challenge cannot be answered again: wallet_signature_invalid without a challenge', async () => {
    const { account, client } = await signedInOwner();
    const { challenge } = (await createKey(client)).body;
    const signature = await account.signMessage({ message: challenge });
    expect((await createKey(client, { signature })).status).toBe(201);
    const replay = await createKey(client, { signature });
    expect(replay.status).toBe(401);
    expect(replay.body.code).toBe('wallet_signature_invalid');
    expect(replay.body).not.toHaveProperty('challenge');
    expect(replay.body).not.toHaveProperty('required');
  });

  it("another wallet's signature is refused, and that challenge is spent", async () => {
    const { account, client, me } = await signedInOwner();
    const { challenge } = (await createKey(client)).body;
    const wrong = await createKey(client, { signature: await newAccount().signMessage({ message: challenge }) });
    expect(wrong.status).toBe(401);
    expect(wrong.body.code).toBe('wallet_signature_invalid');
    expect(wrong.body).not.toHaveProperty('challenge');
    // The right signature of the same challenge now comes too late: single use.
    const late = await createKey(client, { signature: await account.signMessage({ message: challenge }) });
    expect(late.body.code).toBe('wallet_signature_invalid');
    const failures = await auditRows(me.user.id, 'step_up_failed');
    expect(failures.length).toBe(2);
    expect(failures.every((r) => r.outcome === 'failure' && r.target === 'org_api_key_manage')).toBe(true);
  });

  it('a challenge expires after 5 minutes; a new call mints a fresh one that works', async () => {
    const { account, client, me } = await signedInOwner();
    const { challenge } = (await createKey(client)).body;
    // Age the row as five minutes would (the store is the gateway's own).
    const past = new Date(Date.now() - 1000).toISOString();
    await gw.gateway.services.store.updateTable('step_up_challenges').set({ expires_at: past }).where('user_id', '=', me.user.id).execute();
    const expired = await createKey(client, { signature: await account.signMessage({ message: challenge }) });
    expect(expired.status).toBe(401);
    expect(expired.body.code).toBe('wallet_signature_invalid');
    expect(expired.body.error).toMatch(/expired/);
    const fresh = await createKey(client);
    expect(fresh.body.challenge).not.toBe(challenge);
    expect((await createKey(client, { signature: await account.signMessage({ message: fresh.body.challenge }) })).status).toBe(201);
  });

  it('a challenge of one action does not unlock another', async () => {
    const { account, client } = await signedInOwner();
    await enrolTotp(client, account);
    const keyChallenge = (await createKey(client)).body.challenge;
    const removal = await client.fetch('/api/user/totp', { method: 'DELETE', json: { signature: await account.signMessage({ message: keyChallenge }) } });
    expect(removal.status).toBe(401);
    expect(removal.body.code).toBe('wallet_signature_invalid');
  });

  it('budget: 10 requests per 15 minutes per user and action, then 429 with Retry-After, audited once; a success resets it', async () => {
    const { client, me } = await signedInOwner();
    for (let i = 0; i < 10; i++) expect((await createKey(client)).status).toBe(401);
    const over = await createKey(client);
    expect(over.status).toBe(429);
    expect(over.body.code).toBe('rate_limited');
    const retryAfter = Number(over.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(800);
    expect(retryAfter).toBeLessThanOrEqual(900);
    // The first refusal of the window is in the audit log, once: more refusals do not add rows.
    expect((await createKey(client)).status).toBe(429);
    const limited = (await auditRows(me.user.id, 'step_up_failed')).filter((row) => String(row.details).includes('rate_limited'));
    expect(limited).toHaveLength(1);
    expect(limited[0]).toMatchObject({ target: 'org_api_key_manage', outcome: 'failure' });
    // Another action of the same user has its own budget.
    const other = await client.fetch('/api/user/totp', { method: 'POST' });
    expect(other.status).toBe(200);

    // Every request counts, the one carrying a valid signature too: the 11th is refused before its signature is read.
    const second = await signedInOwner();
    for (let i = 0; i < 9; i++) await createKey(second.client);
    const challenge = (await createKey(second.client)).body.challenge; // the 10th request
    expect((await createKey(second.client, { signature: await second.account.signMessage({ message: challenge }) })).status).toBe(429);
  });

  it('the budget is a sliding window: requests leave it 15 minutes after they were made, one by one, not all at once', async () => {
    const { client, me } = await signedInOwner();
    for (let i = 0; i < 10; i++) expect((await createKey(client)).status).toBe(401);
    // Age five of the ten to 14 min 58 s ago: they leave the window in 2 s, the other five stay for 15 minutes.
    const { store } = gw.gateway.services;
    const key = `stepUpPerUserAction:${me.user.id}:org_api_key_manage:session`;
    const rows = await store.selectFrom('rate_limit_hits').select(['id', 'hit_at']).where('key', '=', key).orderBy('hit_at').execute();
    expect(rows).toHaveLength(10);
    const shift = 898_000;
    for (const row of rows.slice(0, 5)) {
      await store
        .updateTable('rate_limit_hits')
        .set((eb) => ({ hit_at: eb('hit_at', '-', shift), expire: eb('expire', '-', shift) }))
        .where('id', '=', row.id)
        .execute();
    }
    const over = await createKey(client);
    expect(over.status).toBe(429);
    // Retry-After is when the oldest request leaves, not the end of a fixed window.
    expect(Number(over.headers.get('retry-after'))).toBeLessThanOrEqual(2);
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    // Five slots freed, not ten: a fixed window would have let a whole new budget through here.
    for (let i = 0; i < 5; i++) expect((await createKey(client)).status).toBe(401);
    const again = await createKey(client);
    expect(again.status).toBe(429);
    expect(Number(again.headers.get('retry-after'))).toBeGreaterThan(800);
  });

  it("a leaked key's attempts spend its own budget and challenge, never the owner's: the owner can still revoke it", async () => {
    const { account, client } = await signedInOwner();
    const ask = await createKey(client, { scope: 'mcp:admin' });
    const made = await createKey(client, { scope: 'mcp:admin', signature: await account.signMessage({ message: ask.body.challenge }) });
    expect(made.status).toBe(201);
    const leaked = { authorization: `Bearer ${made.body.key}`, 'content-type': 'application/json' };
    // The thief asks to revoke... anything, unsigned, until refused: before, this locked the owner out for the window.
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push((await fetch(`${gw.url}/api/keys/${made.body.id}`, { method: 'DELETE', headers: leaked, body: '{}' })).status);
    expect(statuses).toEqual([...Array(10).fill(401), 429]);
    // The owner's session has its own budget and challenge: revoke works, and the leaked key stops.
    const first = await client.fetch(`/api/keys/${made.body.id}`, { method: 'DELETE', json: {} });
    expect(first.status).toBe(401);
    // Another attempt by the thief now does not supersede the challenge the owner is signing.
    await fetch(`${gw.url}/api/keys/${made.body.id}`, { method: 'DELETE', headers: leaked, body: '{}' });
    const revoked = await client.fetch(`/api/keys/${made.body.id}`, {
      method: 'DELETE',
      json: { signature: await account.signMessage({ message: first.body.challenge }) },
    });
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    expect((await fetch(`${gw.url}/api/keys/list`, { headers: leaked })).status).toBe(401);
  });

  it('a proof in the query string of a DELETE is refused, pointing to the body (query strings reach access logs)', async () => {
    const { account, client } = await signedInOwner();
    const ask = await createKey(client, { scope: 'mcp:read' });
    const made = await createKey(client, { scope: 'mcp:read', signature: await account.signMessage({ message: ask.body.challenge }) });
    const first = await client.fetch(`/api/keys/${made.body.id}`, { method: 'DELETE', json: {} });
    const signature = await account.signMessage({ message: first.body.challenge });
    const inQuery = await client.fetch(`/api/keys/${made.body.id}?signature=${signature}`, { method: 'DELETE', json: {} });
    expect(inQuery.status).toBe(400);
    expect(inQuery.body.error).toContain('`signature` in the JSON body of the DELETE');
    // The challenge was not spent: the same signature in the body revokes.
    expect((await client.fetch(`/api/keys/${made.body.id}`, { method: 'DELETE', json: { signature } })).status).toBe(200);
  });

  it('a misspelled field in the body of a gated DELETE is refused by name, not dropped; unknown query parameters stay ignored', async () => {
    const { account, client } = await signedInOwner();
    const ask = await createKey(client, { scope: 'mcp:read' });
    const made = await createKey(client, { scope: 'mcp:read', signature: await account.signMessage({ message: ask.body.challenge }) });
    const first = await client.fetch(`/api/keys/${made.body.id}`, { method: 'DELETE', json: {} });
    const signature = await account.signMessage({ message: first.body.challenge });
    const misspelled = await client.fetch(`/api/keys/${made.body.id}`, { method: 'DELETE', json: { signatrue: signature } });
    expect(misspelled.status).toBe(400);
    expect(misspelled.body.error).toContain('did you mean "signature"?');
    expect(misspelled.body.issues[0]).toMatchObject({ path: 'signatrue', suggestion: 'signature' });
    // Refused before the step-up: the challenge is still live, and the right spelling (with a stray query parameter) revokes.
    const revoked = await client.fetch(`/api/keys/${made.body.id}?utm_source=mail`, { method: 'DELETE', json: { signature } });
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
  });

  it('a success resets the budget', async () => {
    const { account, client } = await signedInOwner();
    for (let i = 0; i < 8; i++) expect((await createKey(client)).status).toBe(401);
    const challenge = (await createKey(client)).body.challenge; // 9th
    expect((await createKey(client, { signature: await account.signMessage({ message: challenge }) })).status).toBe(201); // 10th, success
    for (let i = 0; i < 10; i++) expect((await createKey(client)).status).toBe(401);
    expect((await createKey(client)).status).toBe(429);
  });
});

/** The code of the time step `offset` steps from now (step-up refuses a step already spent, e.g. by the confirmation). */
const codeAt = (secret: string, offset: number) => totpCode({ secret, epoch: Math.floor(Date.now() / 1000) + 30 * offset });

/** Enrols and confirms an authenticator; the confirmation is behind step-up (action totp_enrol). */
async function enrolTotp(client: BrowserClient, account: ReturnType<typeof newAccount>) {
  const started = await client.fetch('/api/user/totp', { method: 'POST' });
  expect(started.status).toBe(200);
  const secret = started.body.secret as string;
  const ask = await client.fetch('/api/user/totp/confirm', { method: 'POST', json: { code: await totpCode({ secret }) } });
  expect(ask.status).toBe(401);
  const confirmed = await client.fetch('/api/user/totp/confirm', {
    method: 'POST',
    json: { code: await totpCode({ secret }), signature: await account.signMessage({ message: ask.body.challenge }) },
  });
  expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
  return secret;
}

describe('TOTP as a further factor', () => {
  it('enrolment returns an otpauth URI; the secret is stored sealed; a wrong code does not confirm', async () => {
    const { client, me } = await signedInOwner();
    const started = await client.fetch('/api/user/totp', { method: 'POST' });
    expect(started.status).toBe(200);
    expect(started.body.otpauthUri).toMatch(/^otpauth:\/\/totp\/Flowgate:/);
    const user = await gw.gateway.services.store.selectFrom('users').selectAll().where('id', '=', me.user.id).executeTakeFirstOrThrow();
    expect(user.totp_secret_encrypted).toBeTruthy();
    expect(user.totp_secret_encrypted).not.toContain(started.body.secret);
    expect(user.totp_enabled_at).toBeNull();
    const wrong = await client.fetch('/api/user/totp/confirm', {
      method: 'POST',
      json: { code: '000000' === (await totpCode({ secret: started.body.secret })) ? '111111' : '000000' },
    });
    expect(wrong.status).toBe(400);
    // Until confirmed, step-up asks for the wallet only.
    expect((await createKey(client)).body.required).toEqual(['wallet']);
  });

  it('confirming an authenticator needs step-up: a session alone (a stolen one) cannot add a factor that would lock the owner out', async () => {
    const { account, client, me } = await signedInOwner();
    const started = await client.fetch('/api/user/totp', { method: 'POST' });
    const secret = started.body.secret as string;
    const ask = await client.fetch('/api/user/totp/confirm', { method: 'POST', json: { code: await totpCode({ secret }) } });
    expect(ask.status).toBe(401);
    expect(ask.body).toMatchObject({ code: 'signature_required', required: ['wallet'] });
    expect(ask.body.challenge).toContain('Action: totp_enrol');
    const user = () => gw.gateway.services.store.selectFrom('users').selectAll().where('id', '=', me.user.id).executeTakeFirstOrThrow();
    expect((await user()).totp_enabled_at).toBeNull();
    // Step-up still asks for the wallet only: nothing was enrolled.
    expect((await createKey(client)).body.required).toEqual(['wallet']);
    // Another wallet's signature does not confirm.
    const again = await client.fetch('/api/user/totp/confirm', { method: 'POST', json: { code: await totpCode({ secret }) } });
    const stranger = await client.fetch('/api/user/totp/confirm', {
      method: 'POST',
      json: { code: await totpCode({ secret }), signature: await newAccount().signMessage({ message: again.body.challenge }) },
    });
    expect(stranger.body.code).toBe('wallet_signature_invalid');
    expect((await user()).totp_enabled_at).toBeNull();
    // A wrong code is refused before the step-up, without spending a signed challenge.
    const third = await client.fetch('/api/user/totp/confirm', { method: 'POST', json: { code: await totpCode({ secret }) } });
    const signature = await account.signMessage({ message: third.body.challenge });
    const current = await totpCode({ secret });
    const wrong = await client.fetch('/api/user/totp/confirm', { method: 'POST', json: { code: current === '000000' ? '111111' : '000000', signature } });
    expect(wrong.status).toBe(400);
    const confirmed = await client.fetch('/api/user/totp/confirm', { method: 'POST', json: { code: current, signature } });
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    expect((await user()).totp_enabled_at).not.toBeNull();
    expect((await auditRows(me.user.id, 'step_up_succeeded')).map((row) => row.target)).toContain('totp_enrol');
  });

  it('with TOTP enrolled: required lists totp; a signature without (or with a wrong) code is factors_required with a fresh challenge; with the code it passes', async () => {
    const { account, client, me } = await signedInOwner();
    const secret = await enrolTotp(client, account);
    expect((await auditRows(me.user.id, 'totp_enrolled')).length).toBe(1);
    // Enrolling again while active is refused (a stolen session cannot swap the factor).
    expect((await client.fetch('/api/user/totp', { method: 'POST' })).status).toBe(409);

    const first = await createKey(client);
    expect(first.body).toMatchObject({ code: 'signature_required', required: ['wallet', 'totp'] });
    const noCode = await createKey(client, { signature: await account.signMessage({ message: first.body.challenge }) });
    expect(noCode.status).toBe(401);
    expect(noCode.body).toMatchObject({ code: 'factors_required', required: ['wallet', 'totp'], missing: ['totp'] });
    expect(noCode.body.challenge).toBeTruthy();
    expect(noCode.body.challenge).not.toBe(first.body.challenge);

    const next = await codeAt(secret, 1);
    const wrongCode = next === '123456' ? '654321' : '123456';
    const badCode = await createKey(client, { signature: await account.signMessage({ message: noCode.body.challenge }), code: wrongCode });
    expect(badCode.body.code).toBe('factors_required');

    // The confirmation spent the current code: replaying it is a wrong code.
    const replayedConfirmation = await createKey(client, {
      signature: await account.signMessage({ message: badCode.body.challenge }),
      code: await codeAt(secret, 0),
    });
    expect(replayedConfirmation.body).toMatchObject({ code: 'factors_required', missing: ['totp'] });

    const ok = await createKey(client, { signature: await account.signMessage({ message: replayedConfirmation.body.challenge }), code: next });
    expect(ok.status).toBe(201);

    // A spent code does not pass again, even with a fresh wallet signature.
    const again = await createKey(client);
    const replay = await createKey(client, { signature: await account.signMessage({ message: again.body.challenge }), code: next });
    expect(replay.body).toMatchObject({ code: 'factors_required', missing: ['totp'] });
  });

  it('removing TOTP needs step-up (wallet + code); afterwards step-up asks for the wallet only', async () => {
    const { account, client, me } = await signedInOwner();
    const secret = await enrolTotp(client, account);
    const first = await client.fetch('/api/user/totp', { method: 'DELETE' });
    expect(first.status).toBe(401);
    expect(first.body).toMatchObject({ code: 'signature_required', required: ['wallet', 'totp'] });
    expect(first.body.challenge).toContain('Action: totp_remove');
    const removed = await client.fetch('/api/user/totp', {
      method: 'DELETE',
      json: { signature: await account.signMessage({ message: first.body.challenge }), code: await codeAt(secret, 1) },
    });
    expect(removed.status).toBe(200);
    expect((await auditRows(me.user.id, 'totp_removed')).length).toBe(1);
    expect((await createKey(client)).body.required).toEqual(['wallet']);
    expect((await client.fetch('/api/user/totp', { method: 'DELETE' })).status).toBe(404);
  });
});

describe('sessions: list and revoke', () => {
  it('lists live sessions with the current one marked; ending another needs step-up; ending the current one is sign-out', async () => {
    const account = newAccount();
    const laptop = browserClient(gw.url);
    const phone = browserClient(gw.url);
    const me = await signIn(laptop, gw.url, account);
    const other = await signIn(phone, gw.url, account);

    const listed = await laptop.fetch('/api/auth/sessions');
    expect(listed.status).toBe(200);
    const byId = Object.fromEntries(listed.body.map((s: { id: string }) => [s.id, s]));
    expect(byId[me.session.id].current).toBe(true);
    expect(byId[other.session.id].current).toBe(false);
    expect(JSON.stringify(listed.body)).not.toMatch(/token/i);

    // Another session: step-up first.
    const first = await laptop.fetch(`/api/auth/sessions/${other.session.id}`, { method: 'DELETE' });
    expect(first.status).toBe(401);
    expect(first.body).toMatchObject({ code: 'signature_required', required: ['wallet'] });
    expect(first.body.challenge).toContain('Action: session_revoke');
    expect((await phone.fetch('/api/auth/session')).status).toBe(200);
    const done = await laptop.fetch(`/api/auth/sessions/${other.session.id}`, {
      method: 'DELETE',
      json: { signature: await account.signMessage({ message: first.body.challenge }) },
    });
    expect(done.status).toBe(200);
    expect(done.body).toEqual({ revoked: true, current: false });
    expect((await phone.fetch('/api/auth/session')).status).toBe(401);
    const [audit] = await auditRows(me.user.id, 'session_revoked');
    expect(audit!.target).toBe(other.session.id);

    // Someone else's session id is unknown here, and no challenge is minted for it.
    const stranger = await signIn(browserClient(gw.url), gw.url, newAccount());
    const foreign = await laptop.fetch(`/api/auth/sessions/${stranger.session.id}`, { method: 'DELETE' });
    expect(foreign.status).toBe(404);
    expect(foreign.body).not.toHaveProperty('challenge');

    // The current session: no step-up, the cookie is cleared and the session is over.
    const out = await laptop.fetch(`/api/auth/sessions/${me.session.id}`, { method: 'DELETE' });
    expect(out.status).toBe(200);
    expect(out.body).toEqual({ revoked: true, current: true });
    expect((await laptop.fetch('/api/auth/session')).status).toBe(401);
  });
});
