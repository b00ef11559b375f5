import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchJson, startTestGateway, tempDir, type TestGateway } from './helpers/gateway.ts';

/**
 * /openapi.json lints clean with Redocly's CLI (its recommended rules), as an
 * OpenAPI client generator would read it. The one tolerated finding is an
 * ambiguity that involves a path the document itself marks deprecated (kept
 * until its sunset for old clients).
 */

const run = promisify(execFile);
const REDOCLY = path.resolve('node_modules/.bin/redocly');

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_BASE_URL: 'https://gateway.flowgate.dev' } });
});
afterAll(() => gw?.close());

interface Problem {
  ruleId: string;
  severity: string;
  message: string;
  location: { pointer: string }[];
}

describe('/openapi.json', { timeout: 120_000 }, () => {
  it('lints clean with @redocly/cli (recommended rules)', async () => {
    const { body } = await fetchJson(`${gw.url}/openapi.json`);
    const file = path.join(tempDir('flowgate-openapi-'), 'openapi.json');
    fs.writeFileSync(file, JSON.stringify(body, null, 2));
    const result = await run(REDOCLY, ['lint', file, '--format=json'], {
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
    const report = JSON.parse(result.stdout) as { totals: { errors: number; warnings: number }; problems: Problem[] };

    const deprecatedPaths = Object.entries(body.paths as Record<string, Record<string, { deprecated?: boolean }>>)
      .filter(([, ops]) => Object.values(ops).every((op) => op.deprecated === true))
      .map(([p]) => p);
    const tolerated = (p: Problem) => p.ruleId === 'no-ambiguous-paths' && deprecatedPaths.some((d) => p.message.includes(`\`${d}\``));
    const remaining = report.problems.filter((p) => !tolerated(p));
    expect(remaining.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
    expect(report.totals.errors).toBe(0);
  });
});
