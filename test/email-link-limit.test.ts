import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { browserClient, signIn } from './helpers/session.ts';
import { operatorMailerEnv, startProviderServers, type ProviderServers } from './helpers/providers.ts';

/**
 * link_email (POST /api/user/email) mails "confirm this address" to any
 * address the signed-in caller names, from the operator's mailer. Besides the
 * per-address limit, each user may have FLOWGATE_RATE_LIMIT_EMAIL_LINK_PER_USER
 * such mails sent per day, and a completed step-up (which resets the step-up
 * budget) does not reset it. Mail goes to a local server speaking Resend's API.
 */

let gw: TestGateway;
let fakes: ProviderServers;

beforeAll(async () => {
  fakes = await startProviderServers();
  gw = await startTestGateway({
    env: {
      ...operatorMailerEnv(fakes),
      FLOWGATE_RATE_LIMIT_EMAIL_LINK_PER_USER: '3',
    },
  });
});
afterAll(async () => {
  await gw?.close();
  await fakes?.close();
});

const mailsTo = (to: string) => fakes.resend.received.filter((r) => r.path === '/emails' && r.body.to.includes(to));

async function walletUser() {
  const account = privateKeyToAccount(generatePrivateKey());
  const client = browserClient(gw.url);
  await signIn(client, gw.url, account);
  /** Asks for a link to `email`, answering the step-up challenge with the wallet's signature. */
  const link = async (email: string) => {
    const first = await client.fetch('/api/user/email', { method: 'POST', json: { email } });
    expect(first.status, JSON.stringify(first.body)).toBe(401);
    const signature = await account.signMessage({ message: first.body.challenge });
    return client.fetch('/api/user/email', { method: 'POST', json: { email, signature } });
  };
  return { link };
}

let n = 0;
const victim = () => `victim${Date.now()}${n++}@example.com`;

describe('address-link mails per user', () => {
  it('are limited per day across addresses; completed step-ups do not reset the count', async () => {
    const attacker = await walletUser();
    for (let i = 0; i < 3; i++) {
      const address = victim();
      const sent = await attacker.link(address);
      expect(sent.status, JSON.stringify(sent.body)).toBe(200);
      expect(sent.body.status).toBe('verification_sent');
      expect(mailsTo(address)).toHaveLength(1);
    }

    const address = victim();
    const refused = await attacker.link(address);
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('rate_limited');
    expect(refused.body.error).toMatch(/Rate limit of 3 address-confirmation mails .* per user per day/);
    expect(refused.body.retryAfterSeconds).toBeGreaterThan(3600);
    expect(refused.headers.get('retry-after')).toBe(String(refused.body.retryAfterSeconds));
    expect(mailsTo(address)).toEqual([]);
    // Still refused on the next try (the refused attempt's step-up succeeded and reset only the step-up budget).
    expect((await attacker.link(victim())).status).toBe(429);

    // Another user has their own count.
    const other = await walletUser();
    const theirs = victim();
    expect((await other.link(theirs)).status).toBe(200);
    expect(mailsTo(theirs)).toHaveLength(1);
  });
});
