import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, tempDir } from './helpers/gateway.ts';

/**
 * The gateway and its embedded devnet never outlive their owner: `kill -TERM`
 * on an `npm start` process (npm does not pass the signal on) stops both, and
 * a devnet orphaned by a SIGKILLed gateway is stopped by the next start
 * before a second anvil opens the same state file.
 */

const started: ChildProcess[] = [];
const pids: number[] = [];

afterAll(() => {
  for (const child of started) child.kill('SIGKILL');
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
});

/** Alive and not a zombie waiting to be reaped. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] !== 'Z';
  } catch {
    return false;
  }
}

async function until<T>(what: string, probe: () => T | Promise<T>, ok: (value: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(value)})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const owner = (dataDir: string) => {
  try {
    return JSON.parse(fs.readFileSync(path.join(dataDir, 'devnet', 'owner.json'), 'utf8')) as { gatewayPid: number; anvilPid: number; url: string };
  } catch {
    return undefined;
  }
};

async function start(command: string, args: string[], dataDir: string) {
  const port = await freePort();
  const child = spawn(command, args, {
    env: { ...process.env, FLOWGATE_DATA_DIR: dataDir, PORT: String(port), FLOWGATE_DEVNET: 'auto', FLOWGATE_RATE_LIMITS: 'off' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  child.stdout!.resume();
  child.stderr!.resume();
  await until(
    'the gateway to answer /healthz',
    () =>
      fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.status,
        () => 0,
      ),
    (s) => s === 200 || child.exitCode !== null,
  );
  expect(child.exitCode).toBeNull();
  const record = await until(
    'the devnet owner record',
    () => owner(dataDir),
    (o) => o !== undefined,
  );
  pids.push(record!.gatewayPid, record!.anvilPid);
  return { child, port, ...record! };
}

describe('process lifecycle', { timeout: 180_000 }, () => {
  it('kill -TERM on the npm start process stops the gateway and its devnet', async () => {
    const dataDir = tempDir();
    const npm = await start('npm', ['start', '--silent'], dataDir);
    expect(npm.gatewayPid).not.toBe(npm.child.pid);
    expect(isAlive(npm.gatewayPid) && isAlive(npm.anvilPid)).toBe(true);
    npm.child.kill('SIGTERM');
    await until(
      'gateway and anvil to exit',
      () => isAlive(npm.gatewayPid) || isAlive(npm.anvilPid),
      (alive) => !alive,
    );
    expect(owner(dataDir)).toBeUndefined(); // shut down cleanly: the record is withdrawn
  });

  it('a SIGTERM that arrives while the gateway is still starting stops the gateway and its devnet', async () => {
    const dataDir = tempDir();
    const child = spawn(process.execPath, [path.resolve('bin/flowgate.js'), 'serve'], {
      env: { ...process.env, FLOWGATE_DATA_DIR: dataDir, PORT: String(await freePort()), FLOWGATE_DEVNET: 'auto', FLOWGATE_RATE_LIMITS: 'off' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    started.push(child);
    child.stdout!.resume();
    child.stderr!.resume();
    // The devnet is up (it starts while the gateway's modules load); the gateway is not yet answering.
    const record = await until(
      'the devnet owner record',
      () => owner(dataDir),
      (o) => o !== undefined,
    );
    pids.push(record!.gatewayPid, record!.anvilPid);
    child.kill('SIGTERM');
    await until(
      'gateway and anvil to exit',
      () => isAlive(record!.gatewayPid) || isAlive(record!.anvilPid),
      (alive) => !alive,
    );
    expect(child.exitCode).toBe(0); // stopped in order, not killed by the signal
  });

  it('a devnet orphaned by a SIGKILLed gateway is stopped by the next start, which keeps the chain state', async () => {
    const dataDir = tempDir();
    const bin = path.resolve('bin/flowgate.js');
    const first = await start(process.execPath, [bin, 'serve'], dataDir);
    const rpc = (method: string, params: unknown[] = []) =>
      fetch(first.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      }).then((r) => r.json());
    // Mine a few blocks so the next start can prove it loaded this state rather than a fresh chain.
    await rpc('anvil_mine', ['0x5']);
    const height = Number((await rpc('eth_blockNumber')).result);
    await rpc('anvil_dumpState'); // anvil writes --state periodically; make sure this height is on disk

    first.child.kill('SIGKILL');
    await until(
      'the gateway to die',
      () => isAlive(first.gatewayPid),
      (alive) => !alive,
    );
    expect(isAlive(first.anvilPid)).toBe(true); // the orphan

    const second = await start(process.execPath, [bin, 'serve'], dataDir);
    expect(isAlive(first.anvilPid)).toBe(false);
    expect(second.anvilPid).not.toBe(first.anvilPid);
    const again = await fetch(second.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] }),
    }).then((r) => r.json());
    expect(Number(again.result)).toBeGreaterThanOrEqual(height);

    second.child.kill('SIGTERM');
    await until(
      'gateway and anvil to exit',
      () => isAlive(second.gatewayPid) || isAlive(second.anvilPid),
      (alive) => !alive,
    );
  });

  // `flowgate serve` starts the devnet before the gateway's modules load (src/cli.ts): a start that fails after that
  // must still stop the anvil it spawned.
  it('a start whose database file is not a database exits 1 naming the file and what to do, and leaves no anvil running', async () => {
    const dataDir = tempDir();
    fs.writeFileSync(path.join(dataDir, 'flowgate.sqlite'), 'this is not a SQLite database, and it is long enough to have a header\n'.repeat(100));
    const port = await freePort();
    const child = spawn(process.execPath, [path.resolve('bin/flowgate.js'), 'serve'], {
      env: { ...process.env, FLOWGATE_DATA_DIR: dataDir, PORT: String(port), FLOWGATE_DEVNET: 'auto', FLOWGATE_RATE_LIMITS: 'off' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    started.push(child);
    let stderr = '';
    child.stdout!.resume();
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // A spawned anvil left running keeps the process alive: that shows as still running, not as a hang of the test.
    const code = await Promise.race([
      new Promise<number | null>((resolve) => child.once('exit', resolve)),
      new Promise<string>((resolve) => setTimeout(() => resolve('still running 60 s after its database failed to open'), 60_000)),
    ]);
    expect(code).toBe(1);
    expect(stderr).toContain(`${path.join(dataDir, 'flowgate.sqlite')} is not a usable SQLite database (file is not a database)`);
    expect(stderr).toContain('FLOWGATE_DATA_DIR');
    // The devnet did start (its state directory is there), and its anvil is gone, its owner record withdrawn.
    expect(fs.existsSync(path.join(dataDir, 'devnet'))).toBe(true);
    const anvils = fs
      .readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .filter((pid) => {
        try {
          return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dataDir) && isAlive(Number(pid));
        } catch {
          return false;
        }
      });
    expect(anvils).toEqual([]);
    expect(owner(dataDir)).toBeUndefined();
  });
});
