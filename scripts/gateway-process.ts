import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { onFreePort } from './free-port.ts';

/**
 * Gateway instances as separate `flowgate serve` processes, the way a
 * deployment runs them: each its own process, port and data directory, all on
 * whatever database and chain the environment names (tests and the scale-out
 * benchmark).
 */

export interface SpawnedGateway {
  url: string;
  pid: number;
  /** SIGTERM (graceful shutdown), resolves on exit. */
  stop(): Promise<void>;
  /** SIGKILL: the instance dies mid-work, leases and all. Resolves on exit. */
  kill(): Promise<void>;
}

const READY_MS = 45_000;

/** `flowgate serve` as a child process; resolves once it answers /healthz with 200. */
export async function spawnGateway(env: Record<string, string>, options: { dataDir?: string } = {}): Promise<SpawnedGateway> {
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'flowgate-instance-'));
  return onFreePort(
    (port) => spawnOn(port, env, dataDir),
    (error) => error instanceof PortTaken,
  );
}

class PortTaken extends Error {}

async function spawnOn(port: number, env: Record<string, string>, dataDir: string): Promise<SpawnedGateway> {
  const child = spawn(process.execPath, [fileURLToPath(new URL('../bin/flowgate.js', import.meta.url)), 'serve'], {
    env: {
      ...process.env,
      FLOWGATE_DEVNET: 'off',
      FLOWGATE_DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      FLOWGATE_BASE_URL: `http://127.0.0.1:${port}`,
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  // Passed on as it comes; the tail is kept to tell a port taken meanwhile from a real failure.
  let stderrTail = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    process.stderr.write(chunk);
    stderrTail = (stderrTail + chunk.toString()).slice(-4096);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + READY_MS;
  for (;;) {
    const status = await fetch(`${url}/healthz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) break;
    if (child.exitCode !== null) {
      await exited;
      if (stderrTail.includes('EADDRINUSE')) throw new PortTaken(`port ${port} was taken before the gateway listened`);
      throw new Error(`spawned gateway exited with ${child.exitCode}`);
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('spawned gateway did not answer /healthz');
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const signal = (name: NodeJS.Signals) => () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(name);
    return exited;
  };
  return { url, pid: child.pid!, stop: signal('SIGTERM'), kill: signal('SIGKILL') };
}
