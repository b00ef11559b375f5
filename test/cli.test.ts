import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { openRuntime } from '../src/gateway.ts';
import { freePort, tempDir } from './helpers/gateway.ts';

const BIN = path.resolve('bin/flowgate.js');

function run(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [BIN, ...args], { env: { ...process.env, FLOWGATE_DEVNET: 'off', ...env }, encoding: 'utf8', timeout: 30_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const lastLine = (text: string) => text.trimEnd().split('\n').at(-1)!;

/** `flowgate serve` started and its start-up text printed in full (it ends with the MCP client configs). */
async function startServe(env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [BIN, 'serve'], { env });
  let out = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${out}`)), 60_000);
    child.stdout.on('data', () => {
      if (out.includes('claude mcp add')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${out}`)));
  });
  return { child, out };
}

/** A data directory holding a gateway database, as `flowgate serve` leaves it. */
async function initializedDataDir(): Promise<string> {
  const dataDir = tempDir();
  const runtime = await openRuntime(loadConfig({ FLOWGATE_DATA_DIR: dataDir, FLOWGATE_DEVNET: 'off' }));
  await runtime.close();
  return dataDir;
}

// Every case spawns the CLI (Node + tsx loading the sources), which takes seconds on a busy machine.
describe('flowgate CLI', { timeout: 180_000 }, () => {
  it('prints help', () => {
    const { code, stdout } = run(['--help']);
    expect(code).toBe(0);
    expect(stdout).toContain('flowgate serve');
    expect(stdout).toContain('keys create --name NAME');
    expect(stdout).toContain('flowgate mcp [--url URL]');
  });

  it('refuses to create a key where no gateway database exists, naming the directory and the variable', () => {
    const dataDir = path.join(tempDir(), 'not-a-gateway');
    const res = run(['keys', 'create', '--name', 'x'], { FLOWGATE_DATA_DIR: dataDir });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(`No Flowgate database in ${dataDir}`);
    expect(res.stderr).toContain('FLOWGATE_DATA_DIR');
    expect(res.stdout).not.toMatch(/svc_/);
    // Nothing was created: no second database, no master key.
    expect(fs.existsSync(dataDir)).toBe(false);
  });

  it('creates keys whose last output line is the key, in the default or a named organization', async () => {
    const dataDir = await initializedDataDir();
    const first = run(['keys', 'create', '--name', 'ci', '--scope', 'mcp:read'], { FLOWGATE_DATA_DIR: dataDir });
    expect(first.code).toBe(0);
    expect(lastLine(first.stdout)).toMatch(/^svc_[A-Za-z0-9_-]{43}$/);

    const other = run(['keys', 'create', '--name', 'acme-bot', '--org', 'acme'], { FLOWGATE_DATA_DIR: dataDir });
    expect(other.code).toBe(0);
    expect(other.stdout).toContain('Created organization: acme');
    expect(lastLine(other.stdout)).toMatch(/^svc_/);
    expect(lastLine(other.stdout)).not.toBe(lastLine(first.stdout));

    const again = run(['keys', 'create', '--name', 'acme-2', '--org', 'acme'], { FLOWGATE_DATA_DIR: dataDir });
    expect(again.stdout).not.toContain('Created organization');

    // The database never holds the key itself.
    const db = fs.readFileSync(path.join(dataDir, 'flowgate.sqlite'));
    expect(db.includes(Buffer.from(lastLine(first.stdout)))).toBe(false);
    // The generated master key file is private.
    expect(fs.statSync(path.join(dataDir, 'master.key')).mode & 0o777).toBe(0o600);
  });

  it('refuses bad arguments and bad configuration with one line and exit code 2', () => {
    const scope = run(['keys', 'create', '--name', 'x', '--scope', 'root'], { FLOWGATE_DATA_DIR: tempDir() });
    // (argument errors are reported before the data directory is looked at)
    expect(scope.code).toBe(2);
    expect(scope.stderr).toContain('--scope must be one of');
    expect(run(['keys', 'create'], { FLOWGATE_DATA_DIR: tempDir() }).code).toBe(2);
    const config = run(['serve'], { PORT: 'eighty', FLOWGATE_DATA_DIR: tempDir() });
    expect(config.code).toBe(2);
    expect(config.stderr.trim().split('\n')).toHaveLength(1);
    expect(config.stderr).toContain('PORT');
    expect(run(['frobnicate']).code).toBe(2);
  });

  it('serve on a port already in use says so in one line, names PORT, and exits 1', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const port = (taken.address() as net.AddressInfo).port;
      const result = run(['serve'], { PORT: String(port), HOST: '127.0.0.1', FLOWGATE_DATA_DIR: tempDir() });
      expect(result.code).toBe(1);
      expect(lastLine(result.stderr)).toBe(
        `flowgate: 127.0.0.1:${port} is already in use (EADDRINUSE): stop what listens there, or choose another port, e.g. PORT=${port + 1} npm start`,
      );
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it('serve starts on embedded defaults and prints a working owner key and MCP config once', async () => {
    const dataDir = tempDir();
    const prefix = `FLOWGATE_DATA_DIR=${JSON.stringify(dataDir)} `;
    const port = await freePort();
    const env = { ...process.env, FLOWGATE_DEVNET: 'off', FLOWGATE_DATA_DIR: dataDir, PORT: String(port) };
    const start = () => startServe(env);
    const stop = (child: ReturnType<typeof spawn>) =>
      new Promise<number | null>((resolve) => {
        child.removeAllListeners('exit');
        child.once('exit', (code) => resolve(code));
        child.kill('SIGTERM');
      });

    const first = await start();
    const key = /^\s+(svc_\S+)$/m.exec(first.out)?.[1];
    expect(key).toBeTruthy();
    expect(first.out).toContain(`"url": "http://localhost:${port}/mcp"`);
    // Claude Desktop: a stdio bridge to this instance with its key, using this checkout's CLI.
    const desktop = JSON.parse(/Claude Desktop[^\n]*\n(\{[\s\S]*?\n\})/.exec(first.out)![1]!);
    expect(desktop.mcpServers.flowgate).toEqual({ command: 'node', args: [BIN, 'mcp', '--url', `http://localhost:${port}`], env: { FLOWGATE_API_KEY: key } });
    const probe = await fetch(`http://127.0.0.1:${port}/api/keys`, { headers: { Authorization: `Bearer ${key}` } });
    expect(probe.status).toBe(200);
    expect(await stop(first.child)).toBe(0);

    const second = await start();
    expect(second.out).not.toContain(key!);
    // Printed commands name this data directory, and work as copied against the running gateway.
    expect(first.out).toContain(`More keys: ${prefix}npx flowgate keys create`);
    expect(second.out).toContain(`Create an API key with: ${prefix}npx flowgate keys create`);
    const minted = run(['keys', 'create', '--name', 'copied'], { FLOWGATE_DATA_DIR: dataDir });
    expect(minted.code).toBe(0);
    const live = await fetch(`http://127.0.0.1:${port}/api/keys`, { headers: { Authorization: `Bearer ${lastLine(minted.stdout)}` } });
    expect(live.status).toBe(200);
    await stop(second.child);
  });

  it('serve with PORT=0 listens on a free port and advertises that port, not 0', async () => {
    const dataDir = tempDir();
    const { child, out } = await startServe({ ...process.env, FLOWGATE_DEVNET: 'off', FLOWGATE_DATA_DIR: dataDir, PORT: '0' });
    try {
      const listening = /listening on http:\/\/127\.0\.0\.1:(\d+) \(public base URL (\S+)\)/.exec(out);
      expect(listening, out).not.toBeNull();
      const [, port, base] = listening!;
      expect(Number(port)).toBeGreaterThan(0);
      expect(base).toBe(`http://localhost:${port}`);
      expect(out).toContain(`"url": "http://localhost:${port}/mcp"`);
      expect(out).not.toContain('localhost:0');
      // The printed MCP endpoint answers, and `flowgate mcp` on this data directory finds the same URL.
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect(fs.readFileSync(path.join(dataDir, 'base-url'), 'utf8').trim()).toBe(base);
    } finally {
      child.kill('SIGTERM');
    }
  });
});
