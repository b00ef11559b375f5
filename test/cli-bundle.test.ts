import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cacheDirFor } from '../bin/bundle.js';
import { tempDir } from './helpers/gateway.ts';

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
    // Same length as before, so only the modification time tells the edit apart.
    setVersion('9.9.9');
    const runs = await Promise.all([version(), version(), version()]);
    for (const run of runs) expect(run).toMatchObject({ code: 0, stdout: '9.9.9', stderr: '' });
    // The old bundle is pruned (no process runs from it any more); the new one was built once and serves all three.
    const [bundle, ...others] = bundles();
    expect(others).toEqual([]);
    expect(bundle!.pids.sort()).toEqual(expect.arrayContaining(runs.map((run) => run.pid).sort()));
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
});
