import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { newSignedInUser } from './helpers/members.ts';

/**
 * Writes of stored objects (workflows, projects, tags, integrations,
 * invitations, public tags, webhook keys) are limited per organization
 * (FLOWGATE_RATE_LIMIT_OBJECT_WRITES_PER_ORG, 3 a minute here), whichever of
 * its keys makes them: over MCP an organization was already held to 120
 * requests a minute, but over REST one key could write rows as fast as the
 * gateway answered, into the disk every tenant shares. Reads and another
 * organization's writes go on.
 */

let gw: TestGateway;
let secondKey: string;
let keyB: string;

beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMIT_OBJECT_WRITES_PER_ORG: '3' } });
  secondKey = await gw.createKey({ name: 'second key of the same organization' });
  keyB = await gw.createKey({ org: 'tenant-b' });
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

const post = (key: string, path: string, body: unknown) => fetchJson(`${gw.url}${path}`, { method: 'POST', key, body: JSON.stringify(body) });
const workflow = {
  name: 'limited',
  nodes: [{ id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } }],
  edges: [],
};

describe('stored-object writes per organization', () => {
  it('refuses the write past the budget across the organization’s keys, with headers, over REST and MCP; reads and other organizations go on', async () => {
    const writes = [
      await post(gw.ownerKey, '/api/workflows/create', workflow),
      await post(secondKey, '/api/tags', { name: 'one', color: '#112233' }),
      await post(gw.ownerKey, '/api/projects', { name: 'one' }),
    ];
    expect(
      writes.map((r) => r.status),
      JSON.stringify(writes.map((r) => r.body)),
    ).toEqual([200, 201, 201]);
    expect(writes[2]!.headers.get('x-ratelimit-limit')).toBe('3');
    expect(writes[2]!.headers.get('x-ratelimit-remaining')).toBe('0');

    const refused = await post(secondKey, '/api/tags', { name: 'two', color: '#112233' });
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('rate_limited');
    expect(refused.body.error).toContain('writes of stored objects');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await fetchJson(`${gw.url}/api/tags`, { key: secondKey })).body.map((t: { name: string }) => t.name)).toEqual(['one']);

    const overMcp = await fetchJson(`${gw.url}/mcp`, {
      method: 'POST',
      key: gw.ownerKey,
      headers: { accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'create_tag', arguments: { name: 'three', color: '#112233' } } }),
    });
    const mcpRefusal = overMcp.body.error ?? JSON.parse(overMcp.body.result.content[0].text);
    expect(JSON.stringify(mcpRefusal)).toContain('rate_limited');

    // Reads are not counted, and another organization writes on.
    expect((await fetchJson(`${gw.url}/api/workflows`, { key: gw.ownerKey })).status).toBe(200);
    expect((await post(keyB, '/api/workflows/create', workflow)).status).toBe(200);
  }, 60_000);

  it('counts public tags and webhook keys too: the shared tag list and the key table are stored objects', async () => {
    const keyC = await gw.createKey({ org: 'tenant-c' });
    const madeKey = await post(keyC, '/api/api-keys', { name: 'hook' });
    const writes = [
      await post(keyC, '/api/public-tags', { name: 'Tenant C tag' }),
      madeKey,
      await fetchJson(`${gw.url}/api/api-keys/${madeKey.body.id}`, { method: 'DELETE', key: keyC }),
    ];
    expect(writes.map((r) => r.status)).toEqual([201, 201, 200]);
    const refused = await post(keyC, '/api/public-tags', { name: 'Tenant C second tag' });
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('rate_limited');
    const tags = (await fetchJson(`${gw.url}/api/public-tags`)).body.map((t: { name: string }) => t.name);
    expect(tags).toContain('Tenant C tag');
    expect(tags).not.toContain('Tenant C second tag');
    expect((await post(keyC, '/api/api-keys', { name: 'second hook' })).status).toBe(429);
  }, 60_000);

  it('counts organization switches too: each writes the session and an audit row, so a member cannot flood an audit log', async () => {
    const user = await newSignedInUser(gw);
    const switchTo = () => user.client.fetch('/api/auth/organization/switch', { method: 'POST', json: { organizationId: user.ownOrganizationId } });
    expect([(await switchTo()).status, (await switchTo()).status, (await switchTo()).status]).toEqual([200, 200, 200]);
    const refused = await switchTo();
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('rate_limited');
    const audited = await gw.gateway.services.store
      .selectFrom('audit_log')
      .select('id')
      .where('organization_id', '=', user.ownOrganizationId)
      .where('action', '=', 'organization_switched')
      .execute();
    expect(audited).toHaveLength(3);
  }, 60_000);
});
