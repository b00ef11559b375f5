import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scanTemplates } from '../src/engine/templates.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { balanceGraph } from './helpers/workflows.ts';

/**
 * Inputs shaped to make a backtracking scan quadratic, sent over HTTP. The
 * gateway runs in this process, so a scan that takes minutes would hold this
 * test past its timeout; with linear scans each request answers normally.
 */

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
});
afterAll(async () => {
  await gw.close();
});

const trigger = { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } };
const httpNode = (id: string, httpBody: string) => ({
  id,
  type: 'action',
  data: { label: `Call ${id}`, config: { actionType: 'HTTP Request', endpoint: 'https://api.example.com/v1', httpMethod: 'POST', httpBody } },
});

describe('templates', () => {
  it('refuses an anonymous graph holding "{{@" and 200,000 spaces never closed with its usual 400', async () => {
    const hostile = `{{@${' '.repeat(200_000)}x`;
    const res = await fetchJson(`${gw.url}/api/workflows/create`, {
      method: 'POST',
      body: JSON.stringify({ name: 'Unclosed', nodes: [trigger, httpNode('h', hostile)], edges: [{ source: 't', target: 'h' }] }),
    });
    expect(res.status).toBe(400);
    expect(res.body.invalidFields).toContainEqual(
      expect.objectContaining({ code: 'invalid_template', path: 'nodes[1].data.config.httpBody', message: expect.stringContaining('unbalanced braces') }),
    );
  });

  it('still reads templates with spaces around and inside them the same way', () => {
    const { refs, malformed } = scanTemplates({ a: 'x {{ @fetch : HTTP Request . data[0] \t}} y {{@fetch:HTTP Request}}', b: '{{@  }}' });
    expect(refs.map(({ raw, nodeId, label, path }) => ({ raw, nodeId, label, path }))).toEqual([
      { raw: '{{ @fetch : HTTP Request . data[0] \t}}', nodeId: 'fetch', label: 'HTTP Request', path: ['data', '0'] },
      { raw: '{{@fetch:HTTP Request}}', nodeId: 'fetch', label: 'HTTP Request', path: [] },
    ]);
    expect(malformed).toEqual([expect.objectContaining({ raw: '{{@  }}', location: 'b', reason: expect.stringContaining('missing ":<Label>"') })]);
  });

  it('counts a refused anonymous creation against the per-IP limit, before the graph is checked', async () => {
    const limited = await startTestGateway({ env: { FLOWGATE_RATE_LIMIT_ANONYMOUS_WORKFLOWS_PER_IP: '2' } });
    try {
      const create = (body: unknown, key?: string) => fetchJson(`${limited.url}/api/workflows/create`, { method: 'POST', key, body: JSON.stringify(body) });
      const invalid = { name: 'Bad', nodes: [{ id: 'a', type: 'action', data: { config: { actionType: 'nope' } } }], edges: [] };
      expect((await create(invalid)).status).toBe(400);
      expect((await create(invalid)).status).toBe(400);
      const refused = await create({ name: 'Valid', ...balanceGraph() });
      expect(refused.status).toBe(429);
      expect(refused.body.error).toContain('authenticate with an API key');
      // With a key the limit does not apply.
      expect((await create({ name: 'Valid', ...balanceGraph() }, limited.ownerKey)).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

describe('redaction of a public workflow', () => {
  it('answers an anonymous read of text that is almost JSON, or has a name of 250,000 capitals, hiding its credentials', async () => {
    const loose = `{ "password": "s3cret-loose-9", ${'a'.repeat(200_000)}`;
    const capitals = (letter: string) => JSON.stringify({ [letter.repeat(250_000)]: 'plain', apiKey: `s3cret-caps-${letter}` });
    const created = await fetchJson(`${gw.url}/api/workflows/create`, {
      method: 'POST',
      key: gw.ownerKey,
      body: JSON.stringify({
        name: 'Long bodies',
        nodes: [trigger, httpNode('loose', loose), httpNode('caps1', capitals('X')), httpNode('caps2', capitals('Y'))],
        edges: [
          { source: 't', target: 'loose' },
          { source: 'loose', target: 'caps1' },
          { source: 'caps1', target: 'caps2' },
        ],
      }),
    });
    expect(created.status, JSON.stringify(created.body).slice(0, 500)).toBe(200);
    const live = await fetchJson(`${gw.url}/api/workflows/${created.body.id}/go-live`, {
      method: 'PUT',
      key: gw.ownerKey,
      body: JSON.stringify({ name: 'Long bodies (public)' }),
    });
    expect(live.status).toBe(200);
    expect(live.body.redactedPaths.sort()).toEqual([
      'nodes[id=caps1].data.config.httpBody.apiKey',
      'nodes[id=caps2].data.config.httpBody.apiKey',
      'nodes[id=loose].data.config.httpBody.password',
    ]);

    const listing = await fetchJson(`${gw.url}/api/workflows/public`);
    expect(listing.status).toBe(200);
    const shown = listing.body.find((w: any) => w.id === created.body.id);
    const bodyOf = (id: string) => shown.nodes.find((n: any) => n.id === id).data.config.httpBody;
    expect(bodyOf('loose')).toBe(`{ "password": "[REDACTED]", ${'a'.repeat(200_000)}`);
    expect(JSON.parse(bodyOf('caps1'))).toEqual({ ['X'.repeat(250_000)]: 'plain', apiKey: '[REDACTED]' });
    expect(JSON.parse(bodyOf('caps2'))).toEqual({ ['Y'.repeat(250_000)]: 'plain', apiKey: '[REDACTED]' });
    expect(JSON.stringify(listing.body)).not.toMatch(/s3cret-/);
  });
});
