import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeSandbox } from '../src/sandbox/quickjs.ts';
import { fetchJson, startTestGateway, tempDir, type TestGateway } from './helpers/gateway.ts';
import { action, linear } from './helpers/web3.ts';

/**
 * Issue 13 A10: the everyday loop from a terminal. `flowgate workflows list`,
 * `run --watch` and `executions logs`, spawned as a user would run them,
 * against a real gateway over HTTP.
 */

const BIN = path.resolve('bin/flowgate.js');

let gw: TestGateway;
let emptyDataDir: string;

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Spawned async: the gateway lives in this process and must keep serving while the CLI runs. */
function cli(args: string[], env: Record<string, string | undefined> = {}, onStdout?: (stdout: string, child: ChildProcess) => void): Promise<CliResult> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('FLOWGATE_')));
  // An empty data directory by default, so nothing advertised in ./data is picked up.
  const childEnv: Record<string, string | undefined> = { ...base, FLOWGATE_DATA_DIR: emptyDataDir, FLOWGATE_API_KEY: gw.ownerKey, ...env };
  for (const [name, value] of Object.entries(childEnv)) if (value === undefined) delete childEnv[name];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: childEnv as NodeJS.ProcessEnv });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      onStdout?.(stdout, child);
    });
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`flowgate ${args.join(' ')} did not finish: ${stdout}${stderr}`));
    }, 90_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const withUrl = (...args: string[]) => [...args, '--url', gw.url];

async function createWorkflow(name: string, graph: { nodes: unknown[]; edges: unknown[] }): Promise<string> {
  const res = await fetchJson(`${gw.url}/api/workflows/create`, { key: gw.ownerKey, method: 'POST', body: JSON.stringify({ name, ...graph }) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id;
}

async function executionCount(workflowId: string): Promise<number> {
  const res = await fetchJson(`${gw.url}/api/workflows/${workflowId}/executions`, { key: gw.ownerKey });
  expect(res.status).toBe(200);
  return res.body.length;
}

/** Index of each expected line fragment in `text`, failing if one is missing. */
function positions(text: string, fragments: string[]): number[] {
  return fragments.map((fragment) => {
    const at = text.indexOf(fragment);
    expect(at, `"${fragment}" in:\n${text}`).toBeGreaterThanOrEqual(0);
    return at;
  });
}

const ascending = (numbers: number[]) => numbers.every((n, i) => i === 0 || n > numbers[i - 1]!);

/** Forwards every request to the gateway and records its path, so a test can count what one CLI command asked for. */
async function countingForwarder(target: string) {
  const paths: string[] = [];
  const server = http.createServer(async (req, res) => {
    paths.push(new URL(req.url ?? '/', 'http://x').pathname);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => name !== 'host' && name !== 'connection')) as Record<string, string>;
    const answer = await fetch(target + req.url, { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
    res.writeHead(answer.status, Object.fromEntries([...answer.headers].filter(([name]) => name !== 'content-encoding' && name !== 'content-length')));
    res.end(Buffer.from(await answer.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    paths,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let sumFlow: string;
let slowFlow: string;
let failFlow: string;

beforeAll(async () => {
  gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
  emptyDataDir = tempDir();
  sumFlow = await createWorkflow(
    'CLI sums',
    linear(
      action('sum1', 'First sum', { actionType: 'math/aggregate', operation: 'sum', values: '[1, 2]' }),
      action('sum2', 'Second sum', { actionType: 'math/aggregate', operation: 'sum', values: '[40, 2]' }),
    ),
  );
  // Busy for ~2.5 s, so a watcher polling every second sees it running before it succeeds.
  slowFlow = await createWorkflow(
    'CLI slow',
    linear(
      action('slow', 'Slow step', {
        actionType: 'code/run-code',
        code: 'const end = Date.now() + 2500; while (Date.now() < end) {} return { done: true }',
        timeout: 10000,
      }),
    ),
  );
  failFlow = await createWorkflow(
    'CLI fails',
    linear(action('boom', 'Boom', { actionType: 'code/run-code', code: 'throw new Error("kaboom from the sandbox")' })),
  );
}, 60_000);

afterAll(async () => {
  await closeSandbox();
  await gw?.close();
});

// Every case spawns the CLI (Node + tsx loading the sources), which takes seconds on a busy machine.
describe('flowgate workflows list / run / executions logs', { timeout: 120_000 }, () => {
  it('are in --help', async () => {
    const res = await cli(['--help']);
    expect(res.code).toBe(0);
    for (const usage of [
      'flowgate workflows list [--json]',
      'flowgate run WORKFLOW_ID [--input JSON] [--watch]',
      'flowgate executions logs EXECUTION_ID [--json]',
    ])
      expect(res.stdout).toContain(usage);
  });

  it('lists the organization’s workflows as a table, and as JSON with --json', async () => {
    const res = await cli(withUrl('workflows', 'list'));
    expect(res.code, res.stderr).toBe(0);
    const [header, ...rows] = res.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^ID\s+NAME\s+ENABLED\s+TRIGGER\s+UPDATED$/);
    for (const [id, name] of [
      [sumFlow, 'CLI sums'],
      [failFlow, 'CLI fails'],
    ]) {
      const row = rows.find((r) => r.startsWith(id!));
      expect(row, res.stdout).toBeDefined();
      expect(row).toContain(name);
      expect(row).toMatch(/\s(yes|no)\s+Manual\s+\d{4}-\d\d-\d\dT/);
    }

    const raw = await cli(withUrl('workflows', 'list', '--json'));
    expect(raw.code, raw.stderr).toBe(0);
    const listed = JSON.parse(raw.stdout) as { id: string }[];
    expect(listed.map((w) => w.id)).toEqual(expect.arrayContaining([sumFlow, slowFlow, failFlow]));
  });

  it('run --watch prints each node as it progresses, then the output, and exits 0 on success', async () => {
    const res = await cli(withUrl('run', sumFlow, '--input', '{"who": "cli"}', '--watch'));
    expect(res.code, res.stderr + res.stdout).toBe(0);
    expect(res.stdout).toMatch(/^Execution \S+ of workflow \S+ started/);
    const order = positions(res.stdout, ['Start [t]  success', 'First sum [sum1]  success', 'Second sum [sum2]  success', ': success', 'Output: ']);
    expect(ascending(order), res.stdout).toBe(true);
    expect(res.stdout).toContain('42');

    const slow = await cli(withUrl('run', slowFlow, '--watch'));
    expect(slow.code, slow.stderr + slow.stdout).toBe(0);
    // Seen while it ran, then again when it finished, with how long it took.
    const [running, done] = positions(slow.stdout, ['Slow step [slow]  running', 'Slow step [slow]  success']);
    expect(running).toBeLessThan(done!);
    expect(slow.stdout).toMatch(/Slow step \[slow\] {2}success {2}\d\.\d s/);
  });

  it('Ctrl-C during run --watch stops the watching, not the run', async () => {
    let interrupted = false;
    const res = await cli(withUrl('run', slowFlow, '--watch'), {}, (stdout, child) => {
      if (!interrupted && stdout.includes('Slow step [slow]  running')) {
        interrupted = true;
        child.kill('SIGINT');
      }
    });
    expect(interrupted).toBe(true);
    expect(res.code).toBe(130);
    const executionId = /^Execution (\S+) of workflow/.exec(res.stdout)![1]!;
    expect(res.stderr).toContain(`execution ${executionId} goes on`);
    expect(res.stdout).not.toContain('Slow step [slow]  success');
    expect(res.stdout).not.toContain(`Execution ${executionId}: `);
    const waited = await fetchJson(`${gw.url}/api/workflows/executions/${executionId}/wait?timeoutMs=20000`, { key: gw.ownerKey });
    expect(waited.body.status).toBe('success');
  });

  it('reads the gateway’s /openapi.json once per command, however many calls the command makes', async () => {
    const forwarder = await countingForwarder(gw.url);
    try {
      const res = await cli(['run', sumFlow, '--watch', '--url', forwarder.url]);
      expect(res.code, res.stderr + res.stdout).toBe(0);
      expect(forwarder.paths.filter((p) => p !== '/openapi.json').length).toBeGreaterThanOrEqual(3); // run, status, logs
      expect(forwarder.paths.filter((p) => p === '/openapi.json')).toHaveLength(1);
    } finally {
      await forwarder.close();
    }
  });

  it('run --watch exits 1 and shows the failing node and error when the run fails', async () => {
    const res = await cli(withUrl('run', failFlow, '--watch'));
    expect(res.code).toBe(1);
    expect(res.stdout).toMatch(/Boom \[boom\] {2}error.*kaboom from the sandbox/);
    expect(res.stdout).toMatch(/Execution \S+: error/);
    expect(res.stdout).toMatch(/^Error: .*kaboom/m);
  });

  it('run prints an execution id that exists, and executions logs shows its nodes oldest first', async () => {
    const res = await cli(withUrl('run', sumFlow));
    expect(res.code, res.stderr).toBe(0);
    const executionId = res.stdout.trim();
    expect(executionId).toMatch(/^\S+$/);
    const waited = await fetchJson(`${gw.url}/api/workflows/executions/${executionId}/wait?timeoutMs=20000`, { key: gw.ownerKey });
    expect(waited.status).toBe(200);
    expect(waited.body.status).toBe('success');

    const logs = await cli(withUrl('executions', 'logs', executionId));
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toContain(`Execution ${executionId} of workflow ${sumFlow} (Manual trigger)`);
    expect(
      ascending(positions(logs.stdout, ['Start [t]  success', 'First sum [sum1]  success', 'Second sum [sum2]  success', `Execution ${executionId}: success`])),
    ).toBe(true);

    const raw = await cli(withUrl('executions', 'logs', executionId, '--json'));
    expect(raw.code).toBe(0);
    const body = JSON.parse(raw.stdout);
    expect(body.execution.executionId).toBe(executionId);
    expect(body.logs.map((l: { nodeId: string }) => l.nodeId)).toEqual(['sum2', 'sum1', 't']); // the API's order: most recent first
  });

  it('finds the gateway from the URL it advertises in the data directory', async () => {
    const res = await cli(['workflows', 'list'], { FLOWGATE_DATA_DIR: gw.dataDir });
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain(sumFlow);
  });

  it('prints the gateway’s refusal in one line with exit code 1: a wrong key, another tenant’s run, an unknown workflow', async () => {
    const refused = await fetchJson(`${gw.url}/api/workflows`, { key: 'svc_not-a-real-key' });
    expect(refused.status).toBe(401);
    const wrongKey = await cli(withUrl('workflows', 'list'), { FLOWGATE_API_KEY: 'svc_not-a-real-key' });
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr.trim().split('\n')).toHaveLength(1);
    expect(wrongKey.stderr).toContain(refused.body.error);
    expect(wrongKey.stderr).toContain(`(${refused.body.code}, HTTP 401)`);

    const mine = (await cli(withUrl('run', sumFlow))).stdout.trim();
    const otherKey = await gw.createKey({ org: 'cli-other-tenant' });
    const foreign = await cli(withUrl('executions', 'logs', mine), { FLOWGATE_API_KEY: otherKey });
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toContain('HTTP 404');
    expect(foreign.stdout).not.toContain('sum1');

    const unknown = await cli(withUrl('run', 'wf_does_not_exist', '--watch'));
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/not_found, HTTP 404/);
  });

  it('refuses with guidance and exit code 2 when the key or the URL is missing, or --input is not a JSON object', async () => {
    const noKey = await cli(withUrl('workflows', 'list'), { FLOWGATE_API_KEY: undefined });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('FLOWGATE_API_KEY is not set');
    expect(noKey.stderr).toContain(`FLOWGATE_DATA_DIR=${JSON.stringify(emptyDataDir)} npx flowgate keys create --name NAME`);

    const noUrl = await cli(['workflows', 'list']);
    expect(noUrl.code).toBe(2);
    for (const option of ['--url', 'FLOWGATE_BASE_URL', path.join(emptyDataDir, 'base-url')]) expect(noUrl.stderr).toContain(option);

    const before = await executionCount(sumFlow);
    for (const input of ['[1, 2]', '"text"', 'null', '{not json']) {
      const bad = await cli(withUrl('run', sumFlow, '--input', input));
      expect(bad.code, input).toBe(2);
      expect(bad.stderr).toContain('--input must be a JSON object');
    }
    expect(await executionCount(sumFlow)).toBe(before); // nothing was started
  });
});
