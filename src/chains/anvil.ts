import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';

/**
 * Runs the `anvil` binary shipped by the npm package @foundry-rs/anvil (its
 * platform package holds the binary, so nothing is downloaded). Used by the
 * embedded devnet and by the test suite; both need a node on a free port.
 */

export interface AnvilOptions {
  chainId: number;
  /** Persist chain state here (loaded at start, dumped on exit and periodically). */
  statePath?: string;
  /** Extra flags, e.g. ['--block-time', '1']. */
  args?: readonly string[];
}

export interface AnvilNode {
  url: string;
  port: number;
  /** The anvil process id (the embedded devnet records it to find an orphan after a crash). */
  pid: number;
  chainId: number;
  stop(): Promise<void>;
}

const PLATFORM_PACKAGES: Record<string, string> = {
  'linux-x64': '@foundry-rs/anvil-linux-amd64',
  'linux-arm64': '@foundry-rs/anvil-linux-arm64',
  'darwin-x64': '@foundry-rs/anvil-darwin-amd64',
  'darwin-arm64': '@foundry-rs/anvil-darwin-arm64',
  'win32-x64': '@foundry-rs/anvil-win32-amd64',
};

export function anvilBinary(): string {
  const pkg = PLATFORM_PACKAGES[`${process.platform}-${process.arch}`];
  if (!pkg)
    throw new Error(`anvil has no build for ${process.platform}-${process.arch}; set FLOWGATE_RPC_URL_31337 to an existing devnet or FLOWGATE_DEVNET=off`);
  const require = createRequire(import.meta.url);
  try {
    return require.resolve(`${pkg}/bin/anvil${process.platform === 'win32' ? '.exe' : ''}`);
  } catch {
    throw new Error(`${pkg} is not installed (run npm install); or set FLOWGATE_RPC_URL_31337 / FLOWGATE_DEVNET=off`);
  }
}

const START_TIMEOUT_MS = 15_000;

/** Starts anvil on a free loopback port and resolves once it accepts JSON-RPC. */
export function startAnvil(options: AnvilOptions): Promise<AnvilNode> {
  // No state history on disk: anvil writes old blocks' states under ~/.foundry/anvil/tmp and leaves them there when it
  // stops (69 GB in one day of this machine's tests and benches); the gateway reads only the latest state, and a chain
  // that keeps no files per block mines about a fifth faster after a minute of traffic.
  // anvil's default rules (Prague) stay, although each Prague block writes a hash into EIP-2935's history contract
  // (8,191 slots) and anvil rehashes its whole state per block, so blocks cost more up to block 8,191 (an empty one
  // 0.9 ms of anvil's CPU at block 2,000, 6.3 ms from 8,000 on; 0.15 ms throughout under `--hardfork cancun`). Under
  // Cancun anvil mines fast enough that its pool race (a send filed as waiting on the one being mined, never promoted)
  // stalled one wallet's pipelined sends within seconds, viem's own included (README "Devnet", bench/HISTORY.md).
  const args = ['--host', '127.0.0.1', '--port', '0', '--chain-id', String(options.chainId), '--max-persisted-states', '0', ...(options.args ?? [])];
  if (options.statePath) args.push('--state', options.statePath, '--state-interval', '5');
  const child = spawn(anvilBinary(), args, { stdio: ['ignore', 'pipe', 'pipe'] });

  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => fail(new Error(`anvil did not start within ${START_TIMEOUT_MS} ms: ${output.slice(-500)}`)), START_TIMEOUT_MS);
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /Listening on ([\d.]+):(\d+)/.exec(output);
      if (!match) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.stdout!.resume(); // keep draining so anvil never blocks on a full pipe
      const port = Number(match[2]);
      resolve({ url: `http://127.0.0.1:${port}`, port, pid: child.pid!, chainId: options.chainId, stop: () => stopChild(child) });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', fail);
    child.once('exit', (code) => fail(new Error(`anvil exited with code ${code} before listening: ${output.slice(-500)}`)));
  });
}

/** SIGTERM lets anvil dump its state file; SIGKILL after a grace period. */
function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
