import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, connectMcp, organizationToolNames } from './helpers/mcp.ts';
import { balanceGraph } from './helpers/workflows.ts';
import { fetchJson, freePort, startTestGateway, tempDir, testDatabaseEnv, type TestGateway } from './helpers/gateway.ts';

/** `flowgate mcp` driven by the SDK's own stdio client, as a desktop app would launch it. */

const BIN = path.resolve('bin/flowgate.js');
const baseEnv = () => Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined && !e[0].startsWith('FLOWGATE_')));

/** The child's environment: FLOWGATE_* from `env` only, plus the database the test gateways on its data directory use. */
const childEnv = async (env: Record<string, string>) => ({
  ...baseEnv(),
  FLOWGATE_DEVNET: 'off',
  ...(env.FLOWGATE_DATA_DIR ? await testDatabaseEnv(env.FLOWGATE_DATA_DIR, env) : {}),
  ...env,
});

async function launch(args: string[], env: Record<string, string>) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp', ...args],
    env: await childEnv(env),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk) => (stderr += chunk));
  const client = new Client({ name: 'stdio-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

/** Runs `flowgate mcp` to its exit (async: the gateway under test lives in this process and must keep answering). */
async function runToExit(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string; timedOut: boolean }> {
  const childEnvironment = await childEnv(env);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, 'mcp', ...args], { env: childEnvironment });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    // stdin stays open, as a desktop client keeps it: the process must exit on its own.
    const timer = setTimeout(() => child.kill('SIGKILL'), 40_000);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, timedOut: signal === 'SIGKILL' });
    });
  });
}

const names = (tools: { name: string }[]) => tools.map((t) => t.name).sort();

// Each case starts a Node process that loads the TypeScript sources: give it time on a busy machine.
describe('flowgate mcp, embedded on the local data directory', { timeout: 90_000 }, () => {
  it('acts as the local owner without a key: lists the organization tools and runs them', async () => {
    const dataDir = tempDir();
    const { client, stderr } = await launch([], { FLOWGATE_DATA_DIR: dataDir });
    try {
      const tools = names((await client.listTools()).tools);
      expect(tools).toEqual(organizationToolNames());

      const created = await callTool(client, 'create_workflow', { name: 'From the desktop', ...balanceGraph() });
      expect(created.isError, JSON.stringify(created.body)).toBe(false);
      const listed = await callTool(client, 'list_workflows');
      expect(listed.structured.workflows.map((w: { name: string }) => w.name)).toContain('From the desktop');

      const refused = await callTool(client, 'get_workflow', { workflowId: 'missing-workflow' });
      expect(refused.isError).toBe(true);
      expect(refused.body.code).toBe('not_found');
    } finally {
      await client.close();
    }
    expect(stderr()).toContain('embedded on');

    // The same data directory, seen through the HTTP gateway: the workflow is there.
    const gw = await startTestGateway({ dataDir });
    try {
      const { body } = await fetchJson(`${gw.url}/api/workflows`, { key: gw.ownerKey });
      expect(body.map((w: { name: string }) => w.name)).toContain('From the desktop');
    } finally {
      await gw.close();
    }
  });

  it('with FLOWGATE_API_KEY acts as that key: a read-only key sees no write tools', async () => {
    const dataDir = tempDir();
    const gw = await startTestGateway({ dataDir });
    const readKey = await gw.createKey({ scope: 'mcp:read' });
    await gw.close();

    const { client } = await launch([], { FLOWGATE_DATA_DIR: dataDir, FLOWGATE_API_KEY: readKey });
    try {
      const tools = names((await client.listTools()).tools);
      expect(tools).toContain('list_workflows');
      expect(tools).not.toContain('create_workflow');
      expect(tools).not.toContain('execute_workflow');
    } finally {
      await client.close();
    }
  });

  it('a key that is not in the data directory: a clear stderr message and exit code 1', async () => {
    const { code, stdout, stderr, timedOut } = await runToExit([], { FLOWGATE_DATA_DIR: tempDir(), FLOWGATE_API_KEY: 'svc_not-a-real-key' });
    expect(timedOut).toBe(false);
    expect(code).toBe(1);
    expect(stderr).toContain('FLOWGATE_API_KEY is not a valid organization key');
    expect(stdout).toBe('');
  });
});

describe('flowgate mcp --url, a bridge to a remote gateway', { timeout: 90_000 }, () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ env: { FLOWGATE_RATE_LIMITS: 'off' } });
  });
  afterAll(() => gw.close());

  it('forwards tools/list and tools/call with the key', async () => {
    const { client, stderr } = await launch(['--url', gw.url], { FLOWGATE_API_KEY: gw.ownerKey });
    try {
      const http = await connectMcp(gw.url, gw.ownerKey);
      const expected = names((await http.listTools()).tools);
      await http.close();
      expect(names((await client.listTools()).tools)).toEqual(expected);

      const created = await callTool(client, 'create_workflow', { name: 'Bridged', ...balanceGraph() });
      expect(created.isError, JSON.stringify(created.body)).toBe(false);
      const { body } = await fetchJson(`${gw.url}/api/workflows/${created.structured.id}`, { key: gw.ownerKey });
      expect(body.name).toBe('Bridged');

      const unknown = await callTool(client, 'no_such_tool');
      expect(unknown.isError).toBe(true);
      expect(unknown.body.code).toBe('unknown_tool');
    } finally {
      await client.close();
    }
    expect(stderr()).toContain(`bridging stdio to ${gw.url}/mcp`);
  });

  it('accepts the /mcp URL too, and without a key offers the public tools only', async () => {
    const { client, stderr } = await launch(['--url', `${gw.url}/mcp`], {});
    try {
      const tools = names((await client.listTools()).tools);
      expect(tools).toContain('list_action_schemas');
      expect(tools).not.toContain('list_workflows');
    } finally {
      await client.close();
    }
    expect(stderr()).toContain('only the public tools');
  });

  it('a wrong key: a clear stderr message and a non-zero exit, not a hang', async () => {
    const { code, stdout, stderr, timedOut } = await runToExit(['--url', gw.url], { FLOWGATE_API_KEY: 'svc_wrong-key-for-this-gateway' });
    expect(timedOut).toBe(false);
    expect(code).toBe(1);
    expect(stderr).toContain(`the gateway at ${gw.url} refused FLOWGATE_API_KEY (HTTP 401)`);
    expect(stdout).toBe('');
  });

  it('an unreachable gateway or a bad URL: a clear message and a non-zero exit', async () => {
    const unreachable = await runToExit(['--url', 'http://127.0.0.1:9'], { FLOWGATE_API_KEY: gw.ownerKey });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain('cannot reach the gateway at http://127.0.0.1:9');
    const bad = await runToExit(['--url', 'not a url'], {});
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--url must be');
  });
});

describe('flowgate mcp embedded sees the same world as flowgate serve on its data directory', { timeout: 180_000 }, () => {
  const owner = (dataDir: string) => {
    try {
      return JSON.parse(fs.readFileSync(path.join(dataDir, 'devnet', 'owner.json'), 'utf8')) as { gatewayPid: number; anvilPid: number };
    } catch {
      return undefined;
    }
  };

  async function expectSameWorld(client: Client, port?: number) {
    const chains = await callTool(client, 'list_chains');
    expect(chains.structured.chains).toEqual(expect.arrayContaining([expect.objectContaining({ chainId: 31337, isEnabled: true })]));
    const listing = await callTool(client, 'get_workflow_listing', { slug: 'microtip' });
    expect(listing.isError, JSON.stringify(listing.body)).toBe(false);
    expect(JSON.stringify(listing.structured.protocols)).toContain('eip155:31337');
    if (port !== undefined) expect(listing.structured.mcpUrl).toBe(`http://localhost:${port}/mcp/w/microtip`);
    // A paid call is challenged on the devnet, not refused as unconfigured.
    const call = await callTool(client, 'call_workflow', { slug: 'microtip', inputs: {} });
    expect(call.isError).toBe(true);
    expect(JSON.stringify(call.body)).not.toContain('payments_unavailable');
    expect(JSON.stringify(call.structured ?? call.body)).toContain('eip155:31337');
  }

  it("uses the running gateway's devnet, prices and URLs", async () => {
    const dataDir = tempDir();
    const port = await freePort();
    const serve = spawn(process.execPath, [BIN, 'serve'], {
      env: await childEnv({ FLOWGATE_DATA_DIR: dataDir, PORT: String(port), FLOWGATE_DEVNET: 'auto' }),
      stdio: 'ignore',
    });
    try {
      const deadline = Date.now() + 90_000;
      while (
        (await fetch(`http://127.0.0.1:${port}/healthz`).then(
          (r) => r.status,
          () => 0,
        )) !== 200
      ) {
        if (Date.now() > deadline || serve.exitCode !== null) throw new Error('serve did not start');
        await new Promise((r) => setTimeout(r, 200));
      }
      const before = owner(dataDir);
      expect(before?.gatewayPid).toBe(serve.pid);
      // No PORT, no FLOWGATE_BASE_URL, devnet on: exactly what a desktop config gives it.
      const { client } = await launch([], { FLOWGATE_DATA_DIR: dataDir, FLOWGATE_DEVNET: 'auto' });
      try {
        await expectSameWorld(client, port);
        expect(owner(dataDir)).toEqual(before); // no second anvil on the same state file
      } finally {
        await client.close();
      }
    } finally {
      serve.kill('SIGTERM');
    }
  });

  it('starts its own devnet when no gateway runs, and stops it when the client leaves', async () => {
    const dataDir = tempDir();
    const { client } = await launch([], { FLOWGATE_DATA_DIR: dataDir, FLOWGATE_DEVNET: 'auto' });
    let anvilPid: number | undefined;
    try {
      await expectSameWorld(client);
      anvilPid = owner(dataDir)?.anvilPid;
      expect(anvilPid).toBeTypeOf('number');
    } finally {
      await client.close();
    }
    const deadline = Date.now() + 30_000;
    while (owner(dataDir) !== undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(owner(dataDir)).toBeUndefined();
  });
});
