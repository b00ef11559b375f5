import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { organizationToolNames } from './helpers/mcp.ts';
import { startTestGateway, tempDir, type TestGateway } from './helpers/gateway.ts';

/**
 * Checks with clients we did not write, fetched from the npm registry by npx:
 * the MCP Inspector CLI and the MCP conformance suite. Both need Node 22 APIs,
 * so they run on a Node 22 binary from the npm `node` package (`npx -p node@22`
 * puts it first on PATH). Pinned: inspector 0.21.1 (the 0.x line with --cli),
 * conformance 0.1.16. The first run downloads them (about a minute); later
 * runs use the npx cache. FLOWGATE_SKIP_EXTERNAL_CLIENTS=1 skips this file on
 * machines without registry access.
 */

const INSPECTOR = '@modelcontextprotocol/inspector@0.21.1';
const CONFORMANCE = '@modelcontextprotocol/conformance@0.1.16';
const BASELINE = path.resolve('test/conformance/baseline.yml');
const skip = process.env.FLOWGATE_SKIP_EXTERNAL_CLIENTS === '1';

/** Async, because the gateway under test runs in this process and must keep answering. */
function npx(packages: string[], command: string[], timeoutMs = 240_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const args = ['-y', '-p', 'node@22', ...packages.flatMap((p) => ['-p', p]), '--', ...command];
    const child = spawn('npx', args, { env: { ...process.env, npm_config_update_notifier: 'false' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`npx ${command[0]} timed out after ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

let gw: TestGateway;
beforeAll(async () => {
  // The conformance suite makes many anonymous tools/call requests; the per-IP limit would turn them into 429s.
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
});
afterAll(() => gw?.close());

describe.skipIf(skip)('MCP Inspector CLI', { timeout: 300_000 }, () => {
  it('lists the organization tools of a started gateway over streamable HTTP', async () => {
    const { code, stdout, stderr } = await npx(
      [INSPECTOR],
      ['mcp-inspector', '--cli', `${gw.url}/mcp`, '--transport', 'http', '--method', 'tools/list', '--header', `Authorization: Bearer ${gw.ownerKey}`],
    );
    expect(code, stderr).toBe(0);
    const { tools } = JSON.parse(stdout.slice(stdout.indexOf('{')));
    expect(tools.map((t: { name: string }) => t.name).sort()).toEqual(organizationToolNames());
    for (const tool of tools) expect(tool.inputSchema.type).toBe('object');
  });

  it('calls a tool and reports a refused key as a failure', async () => {
    const call = await npx(
      [INSPECTOR],
      [
        'mcp-inspector',
        '--cli',
        `${gw.url}/mcp`,
        '--transport',
        'http',
        '--method',
        'tools/call',
        '--tool-name',
        'list_chains',
        '--header',
        `Authorization: Bearer ${gw.ownerKey}`,
      ],
    );
    expect(call.code, call.stderr).toBe(0);
    const result = JSON.parse(call.stdout.slice(call.stdout.indexOf('{')));
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent.chains.length).toBeGreaterThan(0);

    const refused = await npx(
      [INSPECTOR],
      ['mcp-inspector', '--cli', `${gw.url}/mcp`, '--transport', 'http', '--method', 'tools/list', '--header', 'Authorization: Bearer svc_not-a-key'],
    );
    expect(refused.code).not.toBe(0);
    expect(refused.stdout + refused.stderr).toContain('Invalid or revoked API key');
  });
});

describe.skipIf(skip)('MCP conformance suite (server scenarios)', { timeout: 300_000 }, () => {
  it('passes every applicable scenario; the rest are listed with reasons in test/conformance/baseline.yml', async () => {
    const outputDir = tempDir('flowgate-conformance-');
    const { code, stdout, stderr } = await npx(
      [CONFORMANCE],
      ['conformance', 'server', '--url', `${gw.url}/mcp`, '--expected-failures', BASELINE, '-o', outputDir],
    );
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    expect(stdout).toContain('Baseline check passed');

    // The applicable scenarios really ran and succeeded (not merely "not failed").
    const results = fs.readdirSync(outputDir);
    for (const scenario of ['server-initialize', 'ping', 'tools-list', 'tools-call-error', 'dns-rebinding-protection']) {
      const dir = results.find((d) => d.startsWith(`server-${scenario}-`));
      expect(dir, scenario).toBeTruthy();
      const checks = JSON.parse(fs.readFileSync(path.join(outputDir, dir!, 'checks.json'), 'utf8')) as { status: string }[];
      expect(checks.length, scenario).toBeGreaterThan(0);
      expect(
        checks.map((c) => c.status),
        scenario,
      ).toEqual(checks.map(() => 'SUCCESS'));
    }
  });
});
