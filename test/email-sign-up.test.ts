import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { browserClient } from './helpers/session.ts';
import { CREDENTIALS, operatorMailerEnv, startProviderServers, type ProviderServers } from './helpers/providers.ts';
import { CAPTCHA_SECRET, startCaptchaServer, type CaptchaServer } from './helpers/captcha.ts';

/**
 * E-mail sign-up behind a CAPTCHA, the verification link and e-mail sign-in,
 * over real HTTP with a cookie jar. The CAPTCHA provider is a local server
 * speaking siteverify; the deployment mailer sends through a local server
 * speaking Resend's API, and the tests read the links from what it received.
 */

let gw: TestGateway;
let fakes: ProviderServers;
let captcha: CaptchaServer;

beforeAll(async () => {
  [fakes, captcha] = await Promise.all([startProviderServers(), startCaptchaServer()]);
  gw = await startTestGateway({
    env: {
      ...operatorMailerEnv(fakes),
      FLOWGATE_CAPTCHA_PROVIDER: 'turnstile',
      FLOWGATE_CAPTCHA_SECRET: CAPTCHA_SECRET,
      FLOWGATE_CAPTCHA_VERIFY_URL: captcha.url,
      FLOWGATE_RATE_LIMIT_EMAIL_SIGN_UP_PER_IP: '1000',
      FLOWGATE_RATE_LIMIT_EMAIL_SIGN_UP_PER_ADDRESS: '1000',
      FLOWGATE_RATE_LIMIT_EMAIL_SIGN_IN_PER_IP: '1000',
    },
  });
});
afterAll(async () => {
  await gw?.close();
  await fakes?.close();
  await captcha?.close();
});
beforeEach(() => {
  fakes.resend.received.length = 0;
  captcha.received.length = 0;
});

let counter = 0;
const newEmail = () => `person${Date.now()}${counter++}@example.com`;

function signUp(client: ReturnType<typeof browserClient>, body: Record<string, unknown>, captchaResponse: string | null = 'pass-token') {
  return client.fetch('/api/auth/sign-up/email', {
    method: 'POST',
    json: body,
    headers: captchaResponse === null ? {} : { 'x-captcha-response': captchaResponse },
  });
}

/** Mails the Resend server received for `to`, newest last. */
const mailsTo = (to: string) => fakes.resend.received.filter((r) => r.path === '/emails' && r.body.to.includes(to)).map((r) => r.body);
const linkIn = (text: string) => /(http\S+\/api\/auth\/verify-email\?token=\S+)/.exec(text)?.[1];

async function verifiedAccount(password = 'correct horse battery') {
  const email = newEmail();
  const client = browserClient(gw.url);
  expect((await signUp(client, { email, password })).status).toBe(200);
  const link = linkIn(mailsTo(email).at(-1)!.text)!;
  const verified = await client.fetch(link);
  expect(verified.status, JSON.stringify(verified.body)).toBe(200);
  return { email, password, client, verified: verified.body };
}

describe('e-mail sign-up behind a CAPTCHA', () => {
  it('without a CAPTCHA response: 400 MISSING_RESPONSE, nothing created, nothing mailed', async () => {
    const email = newEmail();
    const res = await signUp(browserClient(gw.url), { email, password: 'long enough pw' }, null);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ message: 'Missing CAPTCHA response', code: 'MISSING_RESPONSE' });
    expect(captcha.received).toHaveLength(0);
    expect(mailsTo(email)).toHaveLength(0);
    const user = await gw.gateway.services.store.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();
    expect(user).toBeUndefined();
  });

  it('a response the provider refuses is 400 captcha_failed; the provider got the secret, the response and the caller IP', async () => {
    const email = newEmail();
    const res = await signUp(browserClient(gw.url), { email, password: 'long enough pw' }, 'forged');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'captcha_failed', errorCodes: ['invalid-input-response'] });
    expect(captcha.received).toEqual([{ secret: CAPTCHA_SECRET, response: 'forged', remoteip: '127.0.0.1' }]);
    expect(JSON.stringify(res.body)).not.toContain(CAPTCHA_SECRET);
    expect(mailsTo(email)).toHaveLength(0);
  });

  it('the response may come as captchaToken in the body', async () => {
    const email = newEmail();
    const res = await signUp(browserClient(gw.url), { email, password: 'long enough pw', captchaToken: 'pass-body' }, null);
    expect(res.status).toBe(200);
    expect(captcha.received[0]!.response).toBe('pass-body');
  });

  it('a solved CAPTCHA mails a one-time link; following it verifies, creates the organization and its wallet, and opens the session', async () => {
    const email = newEmail();
    const client = browserClient(gw.url);
    const res = await signUp(client, { email, password: 'correct horse battery', name: 'Ada' });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('verification_sent');
    // No session yet: only the cookie that tells the link this browser signed up.
    expect(res.headers.get('set-cookie')).toMatch(/^flowgate_signup=[\w-]+;/);
    expect(res.headers.get('set-cookie')).not.toContain('flowgate_session');

    const [mail] = mailsTo(email);
    expect(fakes.resend.received.at(-1)!.headers.authorization).toBe(`Bearer ${CREDENTIALS.resend}`);
    expect(mail.from).toContain('no-reply@flowgate.example');
    const link = linkIn(mail.text)!;
    expect(link.startsWith(`${gw.url}/api/auth/verify-email?token=`)).toBe(true);
    // Only the hash of the token is stored.
    const token = new URL(link).searchParams.get('token')!;
    const rows = await gw.gateway.services.store.selectFrom('email_tokens').selectAll().execute();
    expect(JSON.stringify(rows)).not.toContain(token);

    // Not signed in until the link is followed, and not with the password either.
    expect((await client.fetch('/api/auth/sign-in/email', { method: 'POST', json: { email, password: 'correct horse battery' } })).status).toBe(401);

    // The link opened in the browser that signed up (a plain GET, as from a mail client).
    const browser = client;
    const verified = await browser.fetch(link);
    expect(verified.status, JSON.stringify(verified.body)).toBe(200);
    expect(verified.body).toMatchObject({ user: { email }, organization: { role: 'owner', name: "Ada's organization" }, created: true });
    const session = await browser.fetch('/api/auth/session');
    expect(session.status).toBe(200);
    expect(session.body.user.email).toBe(email);
    const wallet = await browser.fetch('/api/user/wallet');
    expect(wallet.status).toBe(200);
    expect(wallet.body.walletAddress).toMatch(/^0x[0-9a-fA-F]{40}$/);

    // The link works once.
    const again = await browserClient(gw.url).fetch(link);
    expect(again.status).toBe(400);
    expect(again.body.code).toBe('email_token_invalid');
  });

  it('opened in another browser, the link verifies and creates the organization but signs nobody in there: no page can sign a visitor into its own account', async () => {
    // The attacker signs up and keeps the link.
    const attackerEmail = newEmail();
    await signUp(browserClient(gw.url), { email: attackerEmail, password: 'attacker password' });
    const attackerLink = linkIn(mailsTo(attackerEmail).at(-1)!.text)!;
    // The victim is signed in to an account of their own, and a page sends their browser to the attacker's link.
    const victim = await verifiedAccount();
    const forced = await victim.client.fetch(attackerLink, { headers: { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' } });
    expect(forced.status, JSON.stringify(forced.body)).toBe(200);
    expect(forced.body).toMatchObject({ user: { email: attackerEmail }, session: null, created: true });
    expect(forced.body.next).toContain('POST /api/auth/sign-in/email');
    expect(forced.headers.get('set-cookie')).toBeNull();
    const still = await victim.client.fetch('/api/auth/session');
    expect(still.body.user.email).toBe(victim.email);
    expect(still.body.organization.id).toBe(victim.verified.organization.id);
    // The attacker's account exists, verified, and its owner signs in with the password.
    const signedIn = await browserClient(gw.url).fetch('/api/auth/sign-in/email', {
      method: 'POST',
      json: { email: attackerEmail, password: 'attacker password' },
    });
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.created).toBe(false);
  });

  it('POST /api/auth/verify-email takes the token in the body', async () => {
    const email = newEmail();
    await signUp(browserClient(gw.url), { email, password: 'correct horse battery' });
    const token = new URL(linkIn(mailsTo(email)[0].text)!).searchParams.get('token');
    const res = await browserClient(gw.url).fetch('/api/auth/verify-email', { method: 'POST', json: { token } });
    expect(res.status).toBe(200);
    expect(res.body.user.email).toBe(email);
  });

  it('a synthetic wallet address cannot sign up', async () => {
    const res = await signUp(browserClient(gw.url), { email: '0xabc@wallet.flowgate.invalid', password: 'long enough pw' });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_input');
  });
});

describe('no route tells whether an address is registered', () => {
  it('sign-up of a registered address answers exactly like a new one, in similar time, and mails the owner a notice without a link', async () => {
    const { email: known } = await verifiedAccount();
    fakes.resend.received.length = 0;
    const fresh = newEmail();
    const times = { known: [] as number[], fresh: [] as number[] };
    let knownRes, freshRes;
    for (let i = 0; i < 3; i++) {
      let t = performance.now();
      knownRes = await signUp(browserClient(gw.url), { email: known, password: 'another password' });
      times.known.push(performance.now() - t);
      t = performance.now();
      freshRes = await signUp(browserClient(gw.url), { email: fresh, password: 'another password' });
      times.fresh.push(performance.now() - t);
    }
    expect(knownRes!.status).toBe(freshRes!.status);
    expect(knownRes!.body).toEqual(freshRes!.body);
    const headerNames = (h: Headers) => [...h.keys()].filter((k) => k !== 'date').sort();
    expect(headerNames(knownRes!.headers)).toEqual(headerNames(freshRes!.headers));
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[1]!;
    expect(Math.abs(median(times.known) - median(times.fresh))).toBeLessThan(Math.max(median(times.known), median(times.fresh)) * 0.75 + 30);

    const notice = mailsTo(known).at(-1)!;
    expect(notice.subject).toMatch(/Sign-up attempt/);
    expect(linkIn(notice.text)).toBeUndefined();
    expect(linkIn(mailsTo(fresh).at(-1)!.text)).toBeDefined();
    // The notice changed nothing: the old password still works, the new one does not.
    expect(
      (await browserClient(gw.url).fetch('/api/auth/sign-in/email', { method: 'POST', json: { email: known, password: 'another password' } })).status,
    ).toBe(401);
    expect(
      (await browserClient(gw.url).fetch('/api/auth/sign-in/email', { method: 'POST', json: { email: known, password: 'correct horse battery' } })).status,
    ).toBe(200);
  });

  it('sign-in refuses an unknown address, a wrong password and an unverified address with one answer', async () => {
    const { email } = await verifiedAccount();
    const unverified = newEmail();
    await signUp(browserClient(gw.url), { email: unverified, password: 'correct horse battery' });
    const attempt = (body: unknown) => browserClient(gw.url).fetch('/api/auth/sign-in/email', { method: 'POST', json: body });
    const answers = await Promise.all([
      attempt({ email: newEmail(), password: 'correct horse battery' }),
      attempt({ email, password: 'wrong horse battery' }),
      attempt({ email: unverified, password: 'correct horse battery' }),
    ]);
    for (const res of answers) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual(answers[0]!.body);
      expect(res.headers.get('set-cookie')).toBeNull();
    }
    expect(answers[0]!.body.code).toBe('invalid_credentials');
  });

  it('sign-in with the right password opens a session in the same organization', async () => {
    const { email, password, verified } = await verifiedAccount();
    const client = browserClient(gw.url);
    const res = await client.fetch('/api/auth/sign-in/email', { method: 'POST', json: { email: email.toUpperCase(), password } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ organization: { id: verified.organization.id }, created: false });
    expect((await client.fetch('/api/auth/session')).body.user.email).toBe(email);
  });

  it('a link gives the password of the sign-up that sent it, not one set later by someone else', async () => {
    const email = newEmail();
    await signUp(browserClient(gw.url), { email, password: 'victim password' });
    const victimLink = linkIn(mailsTo(email).at(-1)!.text)!;
    // Someone else signs the same (still unverified) address up with their own password.
    await signUp(browserClient(gw.url), { email, password: 'attacker password' });
    expect((await browserClient(gw.url).fetch(victimLink)).status).toBe(200);
    const signIn = (password: string) => browserClient(gw.url).fetch('/api/auth/sign-in/email', { method: 'POST', json: { email, password } });
    expect((await signIn('attacker password')).status).toBe(401);
    expect((await signIn('victim password')).status).toBe(200);
    // Verification spent every outstanding link of the address.
    const attackerLink = linkIn(mailsTo(email).at(-1)!.text)!;
    expect((await browserClient(gw.url).fetch(attackerLink)).body.code).toBe('email_token_invalid');
  });

  it('a mail provider failure is 503 email_unavailable and never shows the key', async () => {
    fakes.resend.failNext({ status: 403, body: { statusCode: 403, name: 'invalid_api_key', message: `API key ${CREDENTIALS.resend} is invalid` } });
    const res = await signUp(browserClient(gw.url), { email: newEmail(), password: 'long enough pw' });
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('email_unavailable');
    expect(JSON.stringify(res.body)).not.toContain(CREDENTIALS.resend);
    expect(JSON.stringify(res.body)).not.toMatch(/resend/i);
  });
});

describe('defaults and limits', () => {
  let plain: TestGateway;
  beforeAll(async () => {
    plain = await startTestGateway({ env: { FLOWGATE_RATE_LIMIT_EMAIL_SIGN_IN_PER_IP: '2' } });
  });
  afterAll(async () => plain?.close());

  it('without a mailer e-mail sign-up is off (403), and no CAPTCHA is asked by default', async () => {
    const res = await browserClient(plain.url).fetch('/api/auth/sign-up/email', { method: 'POST', json: { email: newEmail(), password: 'long enough pw' } });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('email_sign_up_disabled');
  });

  it('e-mail sign-in is limited per IP: 429 rate_limited with Retry-After', async () => {
    const attempt = () => browserClient(plain.url).fetch('/api/auth/sign-in/email', { method: 'POST', json: { email: newEmail(), password: 'x' } });
    expect((await attempt()).status).toBe(401);
    expect((await attempt()).status).toBe(401);
    const limited = await attempt();
    expect(limited.status).toBe(429);
    expect(limited.body.code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('sign-up mails to one address are limited, alike for a new and a registered address', async () => {
    const limited = await startTestGateway({
      env: {
        ...operatorMailerEnv(fakes),
        FLOWGATE_RATE_LIMIT_EMAIL_SIGN_UP_PER_ADDRESS: '2',
      },
    });
    try {
      const email = newEmail();
      const attempt = () => browserClient(limited.url).fetch('/api/auth/sign-up/email', { method: 'POST', json: { email, password: 'long enough pw' } });
      expect((await attempt()).status).toBe(200);
      expect((await attempt()).status).toBe(200);
      const third = await attempt();
      expect(third.status).toBe(429);
      expect(third.body.code).toBe('rate_limited');
      expect(mailsTo(email)).toHaveLength(2);
      // Another address still gets its mail.
      expect(
        (await browserClient(limited.url).fetch('/api/auth/sign-up/email', { method: 'POST', json: { email: newEmail(), password: 'long enough pw' } })).status,
      ).toBe(200);
    } finally {
      await limited.close();
    }
  });
});
