import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { insertWorkflow } from './helpers/org-fixtures.ts';

/** validate_workflow and validate_cron through a real gateway, over REST and MCP. */

let gw: TestGateway;
let mcp: Client;
let anonymousMcp: Client;

beforeAll(async () => {
  gw = await startTestGateway();
  mcp = await connectMcp(gw.url, gw.ownerKey);
  anonymousMcp = await connectMcp(gw.url);
});
afterAll(async () => {
  await mcp?.close();
  await anonymousMcp?.close();
  await gw?.close();
});

/** `key` null: no credentials at all. */
const post = (path: string, body: unknown, key: string | null = gw.ownerKey) =>
  fetchJson(`${gw.url}${path}`, { method: 'POST', body: JSON.stringify(body), key: key ?? undefined });

const brokenDraft = {
  nodes: [
    { id: 'trigger', type: 'trigger', data: { label: 'Start', config: { triggerType: 'manual' } } },
    { id: 'cond', type: 'action', data: { label: 'Enough?', config: { actionType: 'condition', condition: 'true' } } },
  ],
  edges: [{ source: 'trigger', target: 'cond' }],
};

/** Stores a workflow row the way the workflows API does (normalized nodes as JSON text). */
const storeWorkflow = (organizationId: string, nodes: unknown[], edges: unknown[]) =>
  insertWorkflow(gw, { organizationId, userId: null, name: 'Stored', nodes, edges });

describe('POST /api/workflows/validate', () => {
  it('answers 200 with valid false and every error of a draft', async () => {
    const { status, body } = await post('/api/workflows/validate', brokenDraft);
    expect(status).toBe(200);
    expect(body).toMatchObject({ valid: false, nodeCount: 2, warnings: [] });
    expect(body.errors).toEqual([
      expect.objectContaining({
        code: 'unknown_trigger_type',
        nodeId: 'trigger',
        nodeLabel: 'Start',
        path: 'nodes[0].data.config.triggerType',
        received: 'manual',
        suggestion: 'Manual',
      }),
      expect.objectContaining({
        code: 'unknown_action_type',
        nodeId: 'cond',
        nodeLabel: 'Enough?',
        path: 'nodes[1].data.config.actionType',
        received: 'condition',
        suggestion: 'Condition',
      }),
    ]);
  });

  it('answers valid true with warnings for a savable draft', async () => {
    const { status, body } = await post('/api/workflows/validate', {
      nodes: [
        { id: 't', type: 'trigger', data: { config: { triggerType: 'Manual' } } },
        { id: 'a', type: 'action', data: {} },
      ],
      edges: [{ source: 't', target: 'a' }],
    });
    expect(status).toBe(200);
    expect(body).toMatchObject({ valid: true, nodeCount: 2, errors: [] });
    expect(body.warnings.map((w: { code: string }) => w.code)).toEqual(['unconfigured_action']);
  });

  it('validates a stored workflow by id, and hides other organizations\u2019 workflows', async () => {
    const { organization } = await gw.gateway.services.organizations.ensure('default');
    const id = await storeWorkflow(organization.id, brokenDraft.nodes, [{ id: 'e1', source: 'trigger', target: 'cond' }]);
    const { status, body } = await post('/api/workflows/validate', { workflowId: id });
    expect(status).toBe(200);
    expect(body.valid).toBe(false);
    expect(body.errors.map((e: { code: string }) => e.code)).toEqual(['unknown_trigger_type', 'unknown_action_type']);

    const otherKey = await gw.createKey({ org: 'other-org' });
    const foreign = await post('/api/workflows/validate', { workflowId: id }, otherKey);
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('not_found');
  });

  it('needs exactly one of workflowId or nodes', async () => {
    const neither = await post('/api/workflows/validate', {});
    expect(neither.status).toBe(400);
    expect(neither.body).toMatchObject({ code: 'invalid_input' });
    expect(neither.body.error).toContain('workflowId');

    const both = await post('/api/workflows/validate', { workflowId: 'abc', ...brokenDraft });
    expect(both.status).toBe(400);
    expect(both.body.error).toContain('not both');
  });

  it('refuses malformed and oversized graphs with 400, never 500', async () => {
    const malformed = await post('/api/workflows/validate', { nodes: [{ id: 'a', type: 'action', data: { config: [] } }] });
    expect(malformed.status).toBe(400);
    expect(malformed.body.code).toBe('invalid_input');

    const tooMany = await post('/api/workflows/validate', { nodes: Array.from({ length: 600 }, (_, i) => ({ id: `n${i}`, type: 'action' })), edges: [] });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error).toContain('at most 500 nodes');
  });

  it('is refused to anonymous callers with 401', async () => {
    const { status, headers } = await post('/api/workflows/validate', brokenDraft, null);
    expect(status).toBe(401);
    expect(headers.get('www-authenticate')).toContain('Bearer');
  });

  it('works as the MCP tool validate_workflow', async () => {
    const { isError, structured } = await callTool(mcp, 'validate_workflow', brokenDraft);
    expect(isError).toBe(false);
    expect(structured).toMatchObject({ valid: false, nodeCount: 2 });
    expect(structured.errors[1]).toMatchObject({ code: 'unknown_action_type', suggestion: 'Condition' });

    const tools = await mcp.listTools();
    const tool = tools.tools.find((t) => t.name === 'validate_workflow')!;
    expect(tool.annotations).toEqual({ readOnlyHint: true, openWorldHint: false });
  });
});

describe('validate_cron', () => {
  it('lists the next runs in a time zone (REST, no key needed)', async () => {
    const { status, body } = await post('/api/workflows/validate-cron', { expression: '0 9 * * *', timezone: 'Europe/Berlin', count: '3' }, null);
    expect(status).toBe(200);
    expect(body).toMatchObject({ valid: true, expression: '0 9 * * *', timezone: 'Europe/Berlin' });
    expect(body.nextRuns).toHaveLength(3);
    for (const run of body.nextRuns as string[]) {
      const date = new Date(run);
      // 09:00 in Berlin is 08:00Z in winter (CET) and 07:00Z in summer (CEST).
      const berlinHour = Number(new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', hourCycle: 'h23' }).format(date));
      expect(berlinHour).toBe(9);
      expect([7, 8]).toContain(date.getUTCHours());
      expect(date.getUTCMinutes()).toBe(0);
    }
    expect(new Date(body.nextRuns[0]).getTime()).toBeGreaterThan(Date.now());
  });

  it('defaults to UTC and five runs', async () => {
    const { status, body } = await post('/api/workflows/validate-cron', { expression: '*/15  * * * *' }, null);
    expect(status).toBe(200);
    expect(body).toMatchObject({ valid: true, expression: '*/15 * * * *', timezone: 'UTC' });
    expect(body.nextRuns).toHaveLength(5);
    const gaps = (body.nextRuns as string[]).slice(1).map((run, i) => new Date(run).getTime() - new Date(body.nextRuns[i]).getTime());
    expect(new Set(gaps)).toEqual(new Set([15 * 60_000]));
  });

  it('refuses a bad expression with 400 invalid_cron and the reason', async () => {
    const { status, body } = await post('/api/workflows/validate-cron', { expression: '61 * * * *' }, null);
    expect(status).toBe(400);
    expect(body.code).toBe('invalid_cron');
    expect(body.error).toContain('minute');

    const fields = await post('/api/workflows/validate-cron', { expression: '* * *' }, null);
    expect(fields.status).toBe(400);
    expect(fields.body.error).toContain('5 fields');
  });

  it('refuses an expression that never fires with 400, also one whose search overflowed the stack (it answered 500)', async () => {
    for (const expression of ['0 0 30 2 *', '0 0 31 2,4,6,9,11 *', '0 0 31 4,6,9,11 *']) {
      const { status, body } = await post('/api/workflows/validate-cron', { expression }, null);
      expect(status, expression).toBe(400);
      expect(body).toMatchObject({ code: 'invalid_cron' });
      expect(body.error).toContain('never fires');
    }
  });

  it('refuses an unknown time zone with 400 invalid_timezone', async () => {
    const { status, body } = await post('/api/workflows/validate-cron', { expression: '0 9 * * *', timezone: 'Europe/Berln' }, null);
    expect(status).toBe(400);
    expect(body.code).toBe('invalid_timezone');
    expect(body.error).toContain('Europe/Berlin');
  });

  it('refuses count outside 1..20', async () => {
    const { status, body } = await post('/api/workflows/validate-cron', { expression: '0 9 * * *', count: 21 }, null);
    expect(status).toBe(400);
    expect(body.code).toBe('invalid_input');
  });

  it('works over MCP for anonymous callers, with next runs in the time zone', async () => {
    const { isError, structured } = await callTool(anonymousMcp, 'validate_cron', { expression: '0 9 * * *', timezone: 'America/New_York', count: 2 });
    expect(isError).toBe(false);
    expect(structured.timezone).toBe('America/New_York');
    for (const run of structured.nextRuns as string[]) {
      const hour = new Intl.DateTimeFormat('en-GB', { timeZone: 'America/New_York', hour: '2-digit', hourCycle: 'h23' }).format(new Date(run));
      expect(Number(hour)).toBe(9);
    }

    const bad = await callTool(anonymousMcp, 'validate_cron', { expression: 'every day' });
    expect(bad.isError).toBe(true);
    expect(bad.body).toMatchObject({ code: 'invalid_cron' });
  });
});
