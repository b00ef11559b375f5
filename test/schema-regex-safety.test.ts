import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RE2JS } from 're2js';
import { loadCatalog } from '../src/catalog/load.ts';
import { checkInputSchema, EMAIL_FORMAT, inputValidatorCount, validateCallInput } from '../src/catalog/input.ts';
import { assertMatchesWebhookSchema, webhookValidatorCount } from '../src/engine/webhook-schema.ts';
import { forgetDfa } from '../src/engine/tenant-schema.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';

/**
 * JSON Schema written by organizations (a listing's inputSchema, a workflow's
 * webhookSchema) is checked on calls anyone can make. Each hostile input below
 * held the event loop for minutes before its fix (the gateway runs in this
 * process, so this file would stall past its timeout); now each call answers
 * with its usual status at once.
 */

let gw: TestGateway;
let key: string;

beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
  key = await gw.createKey({ scope: 'mcp:write', org: 'schema-author' });
});
afterAll(async () => {
  await gw.close();
});

const api = (path: string, body: unknown, withKey = key) => fetchJson(`${gw.url}${path}`, { method: 'POST', key: withKey, body: JSON.stringify(body) });
const call = (slug: string, body: unknown) => fetchJson(`${gw.url}/api/mcp/workflows/${slug}/call`, { method: 'POST', body: JSON.stringify(body) });

const manual = { id: 'trigger', type: 'trigger', data: { label: 'Manual Trigger', config: { triggerType: 'Manual' } } };
const echo = { id: 'echo', type: 'action', data: { label: 'Echo', config: { actionType: 'code/run-code', code: 'return { ok: true };' } } };

async function createWorkflow(nodes: unknown[], edges: unknown[], withKey = key): Promise<string> {
  const res = await api('/api/workflows/create', { name: 'Schema test', nodes, edges }, withKey);
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
  return res.body.id;
}

let slugs = 0;
/** Publishes a fresh free listing with this input schema; returns the answer and its slug. */
async function publish(inputSchema: Record<string, unknown>) {
  const workflowId = await createWorkflow([manual, echo], [{ id: 'e0', source: 'trigger', target: 'echo' }]);
  const slug = `schema-safety-${++slugs}`;
  const res = await api(`/api/workflows/${workflowId}/listing`, {
    slug,
    description: 'Schema safety test.',
    price: null,
    inputSchema,
    outputFields: { ok: 'boolean' },
    result: { nodeId: 'echo', path: 'result' },
  });
  return { res, slug };
}

const stringWith = (extra: Record<string, unknown>) => ({ type: 'object', properties: { x: { type: 'string', ...extra } }, required: ['x'] });

describe('the catalog email-send listing', () => {
  it('refuses an anonymous call whose email is "a@", 600,000 dots and a space with 400 naming email, and sends nothing', async () => {
    // The old format /^[^\s@]+@[^\s@]+\.[^\s@]+$/ was quadratic on this: minutes for one request.
    const res = await call('email-send', { email: `a@${'.'.repeat(600_000)} `, content: 'x' });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_input');
    expect(res.body.issues).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: 'email', code: 'maxLength' }), expect.objectContaining({ path: 'email', code: 'format' })]),
    );
    expect(res.body.error).toContain('email');
  });

  it('still accepts the addresses it accepted, and refuses malformed ones', () => {
    const schema = loadCatalog().find((e) => e.slug === 'email-send')!.inputSchema;
    for (const email of ['reader@example.org', 'Reader@Example.org', 'first.last+tag@mail.example.co.uk', 'x@y.z']) {
      expect(validateCallInput('email-send', schema, { email, content: 'hi' }), email).toEqual({ email, content: 'hi' });
    }
    for (const email of ['reader@example', 'a@b.', 'a@.b', 'a@b..c', 'a b@c.d', 'a@b@c.d', `${'a'.repeat(250)}@b.cd`]) {
      expect(() => validateCallInput('email-send', schema, { email, content: 'hi' }), email).toThrow(
        expect.objectContaining({ status: 400, code: 'invalid_input', message: expect.stringContaining('email') }),
      );
    }
    // Without maxLength (an organization's own schema) the format alone still answers at once.
    expect(EMAIL_FORMAT.test(`a@${'b.'.repeat(400_000)} `)).toBe(false);
  });
});

describe("a published listing's patterns", () => {
  it('run in linear time: "^(a+)+$" against 36 a\'s and "!" is a prompt 400 naming the field', async () => {
    // On JavaScript's RegExp this doubled per character: 4.7 s at 30, minutes at 36.
    const { res, slug } = await publish(stringWith({ pattern: '^(a+)+$' }));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const bad = await call(slug, { x: `${'a'.repeat(36)}!` });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_input');
    expect(bad.body.issues).toEqual([expect.objectContaining({ path: 'x', code: 'pattern' })]);
    expect(bad.body.error).toContain('x must match pattern "^(a+)+$"');
    const good = await call(slug, { x: 'aaa' });
    expect(good.status, JSON.stringify(good.body)).toBe(200);
  });

  it('refuses at publish, with 400 invalid_input_schema naming where, the patterns RE2 cannot run', async () => {
    const lookahead = await publish(stringWith({ pattern: '^(?=a)a+$' }));
    expect(lookahead.res.status).toBe(400);
    expect(lookahead.res.body).toMatchObject({ code: 'invalid_input_schema', field: 'inputSchema' });
    expect(lookahead.res.body.error).toContain('properties.x.pattern');
    expect(lookahead.res.body.error).toContain('lookaround');

    const backreference = await publish({ type: 'object', patternProperties: { '^(a)\\1$': { type: 'string' } } });
    expect(backreference.res.status).toBe(400);
    expect(backreference.res.body).toMatchObject({ code: 'invalid_input_schema', field: 'inputSchema' });
    expect(backreference.res.body.error).toContain('patternProperties["^(a)\\\\1$"]');

    const huge = await publish(stringWith({ pattern: '[a-z]{1000}'.repeat(100) }));
    expect(huge.res.status).toBe(400);
    expect(huge.res.body).toMatchObject({ code: 'invalid_input_schema', field: 'inputSchema' });
    expect(huge.res.body.error).toMatch(/properties\.x\.pattern: pattern .* is too large/);
  });

  it('check at most a bounded amount of text per call: 900,000 characters against a 4,000-instruction pattern is a prompt 400', async () => {
    // Linear, but in text × pattern size: without the bound RE2 spends over a minute here (and backtracking longer).
    const pattern = `${'[a-z]{1000}'.repeat(3)}[a-z]{990}$`;
    const { res, slug } = await publish(stringWith({ pattern }));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const bad = await call(slug, { x: `${'a'.repeat(900_000)}!` });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_input');
    expect(bad.body.error).toContain('too long to check');
    expect(bad.body.issues).toEqual([expect.objectContaining({ code: 'pattern', schemaPath: 'properties.x.pattern' })]);
    // A short value is checked as usual.
    const short = await call(slug, { x: 'abc' });
    expect(short.status).toBe(400);
    expect(short.body.issues).toEqual([expect.objectContaining({ path: 'x', code: 'pattern' })]);
  });

  it("one organization's $id does not stop another from publishing or calling its own schema with the same $id", async () => {
    const first = await publish({ $id: 'https://schemas.example.com/shared.json', ...stringWith({ maxLength: 3 }) });
    expect(first.res.status, JSON.stringify(first.res.body)).toBe(200);
    const second = await publish({ $id: 'https://schemas.example.com/shared.json', ...stringWith({ minLength: 5 }) });
    expect(second.res.status, JSON.stringify(second.res.body)).toBe(200);
    expect((await call(first.slug, { x: 'abc' })).status).toBe(200);
    expect((await call(second.slug, { x: 'abcde' })).status).toBe(200);
    expect((await call(second.slug, { x: 'abc' })).status).toBe(400);
  });
});

/** A document whose level n refers to level n-1 twice: 2^levels checks per call once the $refs are followed. */
const doubling = (levels: number) => {
  const $defs: Record<string, unknown> = { d0: { type: 'string' } };
  for (let n = 1; n <= levels; n++) $defs[`d${n}`] = { allOf: [{ $ref: `#/$defs/d${n - 1}` }, { $ref: `#/$defs/d${n - 1}` }] };
  return { type: 'object', $defs, properties: { x: { $ref: `#/$defs/d${levels}` } } };
};

describe("a published listing's uniqueItems", () => {
  it('checks in time linear in the array: 60,000 distinct objects run, one repeated at the end is a 400 naming both items', async () => {
    // Ajv's own uniqueItems compared every pair of objects: 20,000 took 6 s, this body about a minute.
    const { res, slug } = await publish({ type: 'object', properties: { xs: { type: 'array', uniqueItems: true } }, required: ['xs'] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const xs = Array.from({ length: 60_000 }, (_, i) => ({ n: i }));
    const distinct = await call(slug, { xs });
    expect(distinct.status, JSON.stringify(distinct.body).slice(0, 300)).toBe(200);
    // The same object with its keys in another order is a repeat, as JSON Schema says.
    const repeated = await call(slug, { xs: [...xs, { m: 1, n: 7 }, { n: 7, m: 1 }] });
    expect(repeated.status).toBe(400);
    expect(repeated.body.code).toBe('invalid_input');
    expect(repeated.body.issues).toEqual([expect.objectContaining({ path: 'xs', code: 'uniqueItems' })]);
    expect(repeated.body.error).toContain('items ## 60000 and 60001 are identical');
    // uniqueItems: false still allows repeats.
    const allowed = await publish({ type: 'object', properties: { xs: { type: 'array', uniqueItems: false } } });
    expect((await call(allowed.slug, { xs: [1, 1] })).status).toBe(200);
  });
});

describe('validation work per call', () => {
  const anyOfConstants = (count: number) => ({
    type: 'object',
    properties: { xs: { type: 'array', items: { anyOf: Array.from({ length: count }, (_, i) => ({ const: 1_000_000 + i })) } } },
  });

  it('is bounded by schema × body: an anyOf of 1,000 constants against 20,000 numbers is a prompt 400 naming how many values fit', async () => {
    // Before: 22 s and 3.8 GB collecting 20,000,000 errors for this 40 KB body; a 1 MB body ended the process.
    const { res, slug } = await publish(anyOfConstants(1_000));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const refused = await call(slug, { xs: Array.from({ length: 20_000 }, () => 5) });
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('invalid_input');
    expect(refused.body.issues).toEqual([expect.objectContaining({ path: '(body)', code: 'too_large' })]);
    const fits = refused.body.limit as number;
    expect(refused.body.error).toContain(`more than ${fits} JSON values`);
    // Within the bound (the body object, its property name and the array count too) the call is checked as usual: a matching body runs, a wrong one names the item.
    const ok = await call(slug, { xs: Array.from({ length: fits - 3 }, () => 1_000_999) });
    expect(ok.status, JSON.stringify(ok.body).slice(0, 300)).toBe(200);
    const wrong = await call(slug, { xs: [1_000_000, 5] });
    expect(wrong.status).toBe(400);
    expect(wrong.body.issues).toContainEqual(expect.objectContaining({ path: 'xs.1', code: 'anyOf' }));
    // A larger refused body (past 200,000 units of work) is checked to its first error only, and told that one.
    const manyWrong = await call(slug, { xs: Array.from({ length: 2_000 }, () => 5) });
    expect(manyWrong.status).toBe(400);
    expect(manyWrong.body.issues).toEqual([expect.objectContaining({ path: 'xs.0', code: 'anyOf' })]);
  });

  it('counts a long string by its length: an anyOf of 1,000 maxLength checks against one 900,000-character string is a prompt 400', async () => {
    const branches = Array.from({ length: 1_000 }, (_, i) => ({ maxLength: i }));
    const { res, slug } = await publish({ type: 'object', properties: { s: { anyOf: branches } } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const refused = await call(slug, { s: 'x'.repeat(900_000) });
    expect(refused.status).toBe(400);
    expect(refused.body.issues).toEqual([expect.objectContaining({ code: 'too_large' })]);
    expect((await call(slug, { s: 'short' })).status).toBe(200);
  });

  it('names at most 20 issues, and at most 10 allowed values of an enum', async () => {
    const { slug } = await publish({
      type: 'object',
      properties: { xs: { type: 'array', items: { enum: Array.from({ length: 50 }, (_, i) => `v${i}`) } } },
    });
    const res = await call(slug, { xs: Array.from({ length: 1_000 }, () => 'nope') });
    expect(res.status).toBe(400);
    expect(res.body.issues).toHaveLength(20);
    expect(res.body.issues[0]).toEqual(expect.objectContaining({ path: 'xs.0', code: 'enum' }));
    expect(res.body.issues[0].message).toBe('must be one of "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", … (50 values; see the inputSchema)');
    expect(res.body.error).toContain('(and 980 more)');
  });

  it('bounds a webhook body the same way', async () => {
    const webhookKey = (await api('/api/api-keys', { name: 'hook' }, gw.ownerKey)).body.key;
    const trigger = {
      id: 't',
      type: 'trigger',
      data: { label: 'Start', config: { triggerType: 'Webhook', webhookSchema: JSON.stringify(anyOfConstants(1_000)) } },
    };
    const id = await createWorkflow([trigger, echo], [{ id: 'e0', source: 't', target: 'echo' }], gw.ownerKey);
    const res = await fetchJson(`${gw.url}/api/workflows/${id}/webhook`, {
      method: 'POST',
      key: webhookKey,
      body: JSON.stringify({ xs: Array.from({ length: 20_000 }, () => 5) }),
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_input');
    expect(res.body.error).toContain('JSON values');
  });
});

describe("a published listing's $refs", () => {
  it('may not stand for more than 20,000 subschemas: 40 levels of doubling are refused at publish, naming the cause', async () => {
    // Compiled as it was, each call would take about 2^40 checks: the process, for good.
    const { res, slug } = await publish(doubling(40));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'invalid_input_schema', field: 'inputSchema' });
    expect(res.body.error).toContain('more than 20000 subschemas once its $refs are followed');
    expect((await fetchJson(`${gw.url}/api/mcp/workflows/${slug}`)).status).toBe(404);
  });

  it('may recurse: a tree schema is published and checks a nested body', async () => {
    const tree = {
      type: 'object',
      $defs: { node: { type: 'object', properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/node' } } } } },
      properties: { root: { $ref: '#/$defs/node' } },
      required: ['root'],
    };
    const { res, slug } = await publish(tree);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((await call(slug, { root: { name: 'a', children: [{ name: 'b', children: [{ name: 'c' }] }] } })).status).toBe(200);
    const bad = await call(slug, { root: { name: 'a', children: [{ name: 7 }] } });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_input');
  });
});

describe("a workflow's webhookSchema", () => {
  const webhookWorkflow = (webhookSchema: unknown) => [
    [{ id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Webhook', webhookSchema: JSON.stringify(webhookSchema) } } }, echo],
    [{ id: 'e0', source: 't', target: 'echo' }],
  ];

  it('is refused at save, with 400 invalid_workflow naming the field, when RE2 cannot run a pattern', async () => {
    const [nodes, edges] = webhookWorkflow(stringWith({ pattern: '(?<!a)b' }));
    const res = await api('/api/workflows/create', { name: 'Lookbehind', nodes, edges });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_workflow');
    expect(res.body.invalidFields).toContainEqual(
      expect.objectContaining({
        code: 'invalid_webhook_schema',
        path: 'nodes[0].data.config.webhookSchema',
        message: expect.stringContaining('properties.x.pattern'),
      }),
    );
  });

  it('is refused at save when its $refs double at each level', async () => {
    const [nodes, edges] = webhookWorkflow(doubling(40));
    const res = await api('/api/workflows/create', { name: 'Doubling', nodes, edges });
    expect(res.status).toBe(400);
    expect(res.body.invalidFields).toContainEqual(
      expect.objectContaining({ code: 'invalid_webhook_schema', message: expect.stringContaining('once its $refs are followed') }),
    );
  });

  it('checks a hostile webhook body in linear time: a prompt 400', async () => {
    const webhookKey = (await api('/api/api-keys', { name: 'hook' }, gw.ownerKey)).body.key;
    const [nodes, edges] = webhookWorkflow(stringWith({ pattern: '^(a+)+$' }));
    const id = await createWorkflow(nodes, edges, gw.ownerKey);
    const res = await fetchJson(`${gw.url}/api/workflows/${id}/webhook`, {
      method: 'POST',
      key: webhookKey,
      body: JSON.stringify({ x: `${'a'.repeat(36)}!` }),
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_input');
    expect(res.body.error).toContain('must match pattern');
  });

  it('saved before the save-time check, fails its webhook calls with 409 instead of running the pattern', () => {
    const text = JSON.stringify(stringWith({ pattern: '^(?=a)(a+)+$' }));
    expect(() => assertMatchesWebhookSchema(text, { x: `${'a'.repeat(36)}!` })).toThrow(
      expect.objectContaining({ status: 409, code: 'invalid_webhook_schema', message: expect.stringContaining('properties.x.pattern') }),
    );
  });
});

describe('a listing stored before the pattern rules', () => {
  it('answers its calls 409 listing_schema_unusable, naming the pattern, and runs nothing', async () => {
    const { res, slug } = await publish(stringWith({ maxLength: 40 }));
    expect(res.status).toBe(200);
    // As an older gateway stored it: a lookahead RE2 cannot run, which publish now refuses.
    await gw.gateway.services.store
      .updateTable('workflow_listings')
      .set({ input_schema: JSON.stringify(stringWith({ pattern: '^(?=a)(a+)+$' })) })
      .where('slug', '=', slug)
      .execute();
    const answer = await call(slug, { x: `${'a'.repeat(36)}!` });
    expect(answer.status).toBe(409);
    expect(answer.body).toMatchObject({ code: 'listing_schema_unusable', field: 'inputSchema' });
    expect(answer.body.error).toContain('properties.x.pattern');
    expect(answer.body.error).toContain('publish it again');
  });
});

describe('compiled validators', () => {
  it('are kept for at most 500 input schemas, the latest first; a publish check keeps none', () => {
    const before = inputValidatorCount();
    checkInputSchema(stringWith({ maxLength: 1 }));
    expect(inputValidatorCount()).toBe(before);
    for (let i = 0; i < 600; i++) validateCallInput('s', stringWith({ maxLength: 1000 + i }), { x: 'a' });
    expect(inputValidatorCount()).toBe(500);
    validateCallInput('s', stringWith({ maxLength: 1599 }), { x: 'a' });
    expect(inputValidatorCount()).toBe(500);
  });

  it('are kept for at most 500 webhook schemas', () => {
    for (let i = 0; i < 600; i++) assertMatchesWebhookSchema(JSON.stringify(stringWith({ maxLength: 1000 + i })), { x: 'a' });
    expect(webhookValidatorCount()).toBe(500);
  });

  it("drop re2js's DFA after each validation: the pinned re2js still keeps it where forgetDfa looks", () => {
    const re = RE2JS.compile('a+');
    const dfa = () => (re.re2Input as unknown as { lazyDFA: unknown }).lazyDFA;
    expect(re.test('xaaa')).toBe(true);
    expect(dfa()).toBeTruthy();
    forgetDfa(re);
    expect(dfa()).toBeNull();
    expect(re.test('xaaa')).toBe(true);
  });
});
