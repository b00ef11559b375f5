import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cacheDirFor } from '../bin/bundle.js';
import { freePort, tempDir } from './helpers/gateway.ts';

/**
 * bin/flowgate.js runs the sources from an esbuild bundle cached per checkout.
 * These run the CLI of a copy of this checkout (its sources, the real
 * packages), so edits and a broken cache stay away from the real one.
 */
const checkout = tempDir('flowgate-bundle-');
for (const entry of ['src', 'tools', 'bin', 'package.json', 'tsconfig.json']) fs.cpSync(entry, path.join(checkout, entry), { recursive: true });
fs.symlinkSync(fs.realpathSync('node_modules'), path.join(checkout, 'node_modules'));
const cache = cacheDirFor(checkout);

afterAll(() => {
  fs.rmSync(cache, { recursive: true, force: true });
  fs.rmSync(checkout, { recursive: true, force: true });
});

function version() {
  return new Promise<{ pid: number; code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [path.join(checkout, 'bin/flowgate.js'), '--version'], { env: { ...process.env, FLOWGATE_DEVNET: 'off' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.once('exit', (code) => resolve({ pid: child.pid!, code, stdout: stdout.trim(), stderr }));
  });
}

/** The bundles in the cache, and which of them each process ran from. */
function bundles() {
  return fs
    .readdirSync(cache)
    .filter((name) => !name.endsWith('.lock'))
    .map((name) => ({ name, pids: fs.readdirSync(path.join(cache, name, 'pids')).map(Number) }));
}

const setVersion = (value: string) =>
  fs.writeFileSync(
    path.join(checkout, 'src/version.ts'),
    fs.readFileSync('src/version.ts', 'utf8').replace(/GATEWAY_VERSION = '[^']*'/, `GATEWAY_VERSION = '${value}'`),
  );

describe('bin/flowgate.js bundle', { timeout: 120_000 }, () => {
  it('runs the CLI from a bundle, and reuses it while the sources are unchanged', async () => {
    const first = await version();
    expect(first).toMatchObject({ code: 0, stdout: '0.1.0', stderr: '' });
    const second = await version();
    expect(second.stdout).toBe('0.1.0');
    const [bundle, ...others] = bundles();
    expect(others).toEqual([]);
    expect(bundle!.pids).toEqual(expect.arrayContaining([first.pid, second.pid]));
  });

  it('never runs a stale bundle: an edited source is rebuilt, once, however many processes start together', async () => {
    const [old] = bundles();
    // Its processes have exited; a minute has passed since the last started from it (so it may be pruned).
    const minuteAgo = new Date(Date.now() - 120_000);
    fs.utimesSync(path.join(cache, old!.name, 'pids'), minuteAgo, minuteAgo);
    // Same length as before, so only the modification time tells the edit apart.
    setVersion('9.9.9');
    const runs = await Promise.all([version(), version(), version()]);
    for (const run of runs) expect(run).toMatchObject({ code: 0, stdout: '9.9.9', stderr: '' });
    // One new bundle serves all three; the old one is pruned.
    const [bundle, ...others] = bundles();
    expect(others).toEqual([]);
    expect(bundle!.name).not.toBe(old!.name);
    expect(bundle!.pids).toEqual(expect.arrayContaining(runs.map((run) => run.pid)));
  });

  it('keeps an older bundle while a process runs from it', async () => {
    const [current] = bundles();
    const minuteAgo = new Date(Date.now() - 120_000);
    fs.utimesSync(path.join(cache, current!.name, 'pids'), minuteAgo, minuteAgo);
    // This process stands in for a long-running gateway started from that bundle.
    fs.writeFileSync(path.join(cache, current!.name, 'pids', String(process.pid)), '');
    setVersion('8.8.8');
    expect((await version()).stdout).toBe('8.8.8');
    expect(bundles().map((b) => b.name)).toContain(current!.name);
    expect(bundles()).toHaveLength(2);
  });

  it('falls back to tsx, with a note, when it cannot bundle', async () => {
    fs.rmSync(cache, { recursive: true, force: true });
    // A file where the cache directory should be: nothing can be written there.
    fs.writeFileSync(cache, '');
    setVersion('7.7.7');
    const run = await version();
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('7.7.7');
    expect(run.stderr).toMatch(/^flowgate: running the sources through tsx \(no bundle: /);
  });

  /** `flowgate serve` from the bundle on a free port; `api` calls it as the seeded owner. */
  async function serveFromBundle(env: Record<string, string>) {
    const port = await freePort();
    const dataDir = tempDir();
    const gateway = spawn(process.execPath, [path.resolve('bin/flowgate.js'), 'serve'], {
      env: { ...process.env, FLOWGATE_DATA_DIR: dataDir, PORT: String(port), FLOWGATE_RATE_LIMITS: 'off', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const close = async () => {
      gateway.kill('SIGTERM');
      if (gateway.exitCode === null) await new Promise((resolve) => gateway.once('exit', resolve));
      fs.rmSync(dataDir, { recursive: true, force: true });
    };
    let out = '';
    gateway.stdout.on('data', (c) => (out += c));
    gateway.stderr.on('data', (c) => (out += c));
    try {
      const ownerKey = await new Promise<string>((resolve, reject) => {
        gateway.stdout.on('data', () => {
          const key = /svc_[\w-]+/.exec(out)?.[0];
          if (key) resolve(key);
        });
        gateway.once('exit', () => reject(new Error(`serve exited: ${out}`)));
      });
      const base = `http://127.0.0.1:${port}`;
      const api = async (route: string, body?: unknown) => {
        const response = await fetch(`${base}${route}`, {
          method: body ? 'POST' : 'GET',
          headers: { authorization: `Bearer ${ownerKey}`, ...(body ? { 'content-type': 'application/json' } : { accept: 'text/html' }) },
          body: body ? JSON.stringify(body) : undefined,
        });
        return { status: response.status, text: await response.text() };
      };
      return { api, output: () => out, close, base: () => base, key: () => ownerKey };
    } catch (error) {
      await close();
      throw error;
    }
  }

  it('serves from the bundle: files found next to the sources, lazy chunks, and the sandbox worker', async () => {
    const { api, output, close, base, key } = await serveFromBundle({ FLOWGATE_DEVNET: 'off' });
    try {
      expect(output()).not.toMatch(/through tsx/);
      // docs/*.md (next to src/docs) through the lazily loaded markdown renderer; web/dist next to src/http.
      const docs = await api('/docs');
      expect(docs.status).toBe(200);
      expect(docs.text).toMatch(/<html/i);
      expect((await api('/app')).status).toBe(200);
      // zod speaks English only in the bundle (its other locales are left out): a bad field still reads as it should.
      const refused = await api('/api/workflows/create', { name: 5, nodes: [], edges: [] });
      expect(refused.status).toBe(400);
      expect(JSON.parse(refused.text).issues).toEqual([{ path: 'name', message: 'Invalid input: expected string, received number', code: 'invalid_type' }]);
      // iconv-lite stays in node_modules: a UTF-16 body is still decoded (its nodes and edges are what is missing).
      const utf16 = await fetch(`${base()}/api/workflows/create`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key()}`, 'content-type': 'application/json; charset=utf-16le' },
        body: Buffer.from(JSON.stringify({ name: 'Sixteen bits' }), 'utf16le'),
      });
      expect(utf16.status).toBe(400);
      expect((await utf16.json()).issues.map((issue: { path: string }) => issue.path)).toEqual(['nodes', 'edges']);
      // A code step: the QuickJS worker's entry is found next to src/sandbox/pool.ts.
      const created = await api('/api/workflows/create', {
        name: 'Bundle check',
        nodes: [
          { id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } },
          { id: 'c', type: 'action', data: { label: 'Answer', config: { actionType: 'code/run-code', code: 'return 6 * 7' } } },
        ],
        edges: [{ source: 't', target: 'c' }],
      });
      expect(created.status, created.text).toBe(200);
      const started = await api(`/api/workflows/${JSON.parse(created.text).id}/execute`, { input: {} });
      expect(started.status, started.text).toBe(200);
      const waited = JSON.parse((await api(`/api/workflows/executions/${JSON.parse(started.text).executionId}/wait?timeoutMs=30000`)).text);
      expect(waited).toMatchObject({ status: 'success', completed: true });
      expect(JSON.stringify(waited.output)).toContain('42');
    } finally {
      await close();
    }
  });

  it('signs from the bundle: a transfer on the embedded devnet (libsecp256k1 loads its WebAssembly next to its own module)', async () => {
    const { api, output, close } = await serveFromBundle({});
    try {
      expect(output()).not.toMatch(/through tsx/);
      const to = `0x${'be'.repeat(20)}`;
      const sent = await api('/api/execute/transfer', { chainId: 31337, recipientAddress: to, amount: '0.001' });
      expect(sent.status, sent.text).toBe(202);
      expect(JSON.parse(sent.text)).toMatchObject({ status: 'completed', receipts: [{ verified: true, receiptStatus: 'success' }] });
    } finally {
      await close();
    }
  });
});
