import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { newSignedInUser, type SignedInUser } from './helpers/members.ts';
import { action, linear, runWorkflow } from './helpers/web3.ts';

/**
 * Each open analytics stream re-reads its organization's summary every 2 s and
 * after run endings. One tenant opening thousands held the process's CPU, and
 * every run ending anywhere woke every stream. Now an organization holds at
 * most FLOWGATE_MAX_EVENT_STREAMS_PER_ORG streams on a process (the next is an
 * ordinary 429 before any event), a closed one frees its place, and a stream
 * is woken only by its own organization's runs.
 */

let gw: TestGateway;
let a: SignedInUser;
let b: SignedInUser;

beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_MAX_EVENT_STREAMS_PER_ORG: '2', FLOWGATE_RATE_LIMITS: 'off' } });
  [a, b] = [await newSignedInUser(gw), await newSignedInUser(gw)];
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

/** Opens the stream as the user's browser would; an open stream stays open until `close`. */
async function openStream(user: SignedInUser) {
  const abort = new AbortController();
  const response = await fetch(`${gw.url}/api/analytics/stream`, {
    headers: { cookie: await user.client.jar.getCookieString(gw.url), origin: gw.url },
    signal: abort.signal,
  });
  const body = response.headers.get('content-type')?.startsWith('application/json') ? await response.json() : undefined;
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    body,
    close: () => abort.abort(),
  };
}

describe('open analytics streams per organization', () => {
  it('refuses the stream past the bound with a JSON 429, counts each organization on its own, and frees a closed stream’s place', async () => {
    const first = await openStream(a);
    const second = await openStream(a);
    expect([first.status, second.status]).toEqual([200, 200]);

    const refused = await openStream(a);
    expect(refused.status).toBe(429);
    expect(refused.retryAfter).toBe('30');
    expect(refused.body).toMatchObject({ code: 'rate_limited', limit: 2, retryAfterSeconds: 30 });
    expect(refused.body.error).toContain('already has 2 event streams open on this instance (FLOWGATE_MAX_EVENT_STREAMS_PER_ORG)');

    // Another organization is not held back by the first one's streams.
    const other = await openStream(b);
    expect(other.status).toBe(200);

    // Closing one frees its place once the gateway sees the connection go.
    first.close();
    const deadline = Date.now() + 10_000;
    let again = await openStream(a);
    while (again.status === 429 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      again = await openStream(a);
    }
    expect(again.status).toBe(200);
    for (const stream of [second, other, again]) stream.close();
  }, 60_000);

  it("run endings name their organization, so a stream wakes only for its own organization's runs", async () => {
    const ended: { executionId: string; organizationId: string | undefined }[] = [];
    const off = gw.gateway.services.engine.events.onAnyFinished((executionId, organizationId) => ended.push({ executionId, organizationId }));
    try {
      const run = await runWorkflow(gw, linear(action('sum', 'Sum', { actionType: 'math/aggregate', operation: 'sum', values: '[1, 2]' })));
      const ownerOrganization = (await fetchJson(`${gw.url}/api/keys`, { key: gw.ownerKey })).body.organization.id;
      expect(ownerOrganization).toEqual(expect.any(String));
      expect(ended.find((e) => e.executionId === run.executionId)?.organizationId).toBe(ownerOrganization);
      expect(ownerOrganization).not.toBe(a.ownOrganizationId);
    } finally {
      off();
    }
  }, 60_000);
});
