import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../../config.ts';
import { startAnvil } from '../anvil.ts';
import type { Devnet } from './devnet.ts';
import { DEVNET_CHAIN_ID } from './chain-id.ts';

/**
 * The devnet's lifecycle for a serving gateway (DESIGN.md "Chains and the
 * embedded default"):
 * - FLOWGATE_DEVNET=off: none.
 * - FLOWGATE_RPC_URL_31337 set: use that node (test USDC deployed if missing); nothing spawned.
 * - otherwise: spawn anvil with its state in <dataDir>/devnet/state.json, point
 *   config.rpcUrls[31337] at it (the chain catalog reads it per call) and
 *   advertise its URL in <dataDir>/devnet/rpc-url for `flowgate devnet fund`.
 */

export interface RunningDevnet {
  devnet: Devnet;
  /** True when this process spawned the node (and stops it). */
  spawned: boolean;
  stop(): Promise<void>;
}

export const devnetDirectory = (dataDir: string) => path.join(dataDir, 'devnet');
const stateFile = (dataDir: string) => path.join(devnetDirectory(dataDir), 'state.json');
const rpcUrlFile = (dataDir: string) => path.join(devnetDirectory(dataDir), 'rpc-url');
/** Which gateway process spawned which anvil: lets the next start find a node orphaned by SIGKILL. */
const ownerFile = (dataDir: string) => path.join(devnetDirectory(dataDir), 'owner.json');

interface DevnetOwner {
  gatewayPid: number;
  anvilPid: number;
  url: string;
}

function readOwner(dataDir: string): DevnetOwner | undefined {
  try {
    const owner = JSON.parse(fs.readFileSync(ownerFile(dataDir), 'utf8')) as Partial<DevnetOwner>;
    return Number.isInteger(owner.gatewayPid) && Number.isInteger(owner.anvilPid) && typeof owner.url === 'string' ? (owner as DevnetOwner) : undefined;
  } catch {
    return undefined;
  }
}

/** A process that exists and is not a zombie (an exited orphan its new parent has not reaped yet). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

/**
 * True when `pid` is an anvil on this state file. Where /proc cannot tell
 * (not Linux), a live pid recorded by us is taken as ours; on Linux a reused
 * pid of some other program is never signalled.
 */
function isAnvilOf(pid: number, statePath: string): boolean {
  try {
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return path.basename(cmdline[0] ?? '').startsWith('anvil') && cmdline.includes(statePath);
  } catch {
    return process.platform !== 'linux';
  }
}

/** SIGTERM (anvil writes its state), then SIGKILL if it lingers. */
async function stopOrphan(pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  for (let waited = 0; waited < 5_000 && isAlive(pid); waited += 50) await new Promise((r) => setTimeout(r, 50));
  if (isAlive(pid)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
    for (let waited = 0; waited < 2_000 && isAlive(pid); waited += 50) await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * `claimSpawn`: asked right before this process would spawn its own anvil; throws to refuse (several instances
 * on one PostgreSQL database must share one chain), else returns what to call when that node stops.
 */
export async function openDevnet(config: Config, options: { claimSpawn?: () => Promise<() => Promise<void>> } = {}): Promise<RunningDevnet | null> {
  if (config.devnet === 'off') return null;
  // viem and the devnet's contracts load while anvil boots: `flowgate serve` calls this before the gateway's modules load (src/cli.ts).
  const devnetModule = import('./devnet.ts');
  devnetModule.catch(() => {}); // awaited by every path that connects; a path that fails first reports its own error
  const connectDevnet = async (url: string) => (await devnetModule).connectDevnet(url);

  const configured = config.rpcUrls[DEVNET_CHAIN_ID];
  if (configured) {
    const devnet = await connectDevnet(configured).catch((error: Error) => {
      throw new Error(
        `FLOWGATE_RPC_URL_${DEVNET_CHAIN_ID} is set but that devnet could not be used: ${error.message.split('\n')[0]} (start it, unset the variable, or set FLOWGATE_DEVNET=off)`,
      );
    });
    return { devnet, spawned: false, stop: async () => {} };
  }

  fs.mkdirSync(devnetDirectory(config.dataDir), { recursive: true, mode: 0o700 });
  const previous = readOwner(config.dataDir);
  if (previous && isAlive(previous.anvilPid) && isAnvilOf(previous.anvilPid, stateFile(config.dataDir))) {
    if (isAlive(previous.gatewayPid)) {
      // Another gateway serves this data directory: share its node rather than open the same state file twice.
      const devnet = await connectDevnet(previous.url);
      config.rpcUrls[DEVNET_CHAIN_ID] = previous.url;
      return { devnet, spawned: false, stop: async () => {} };
    }
    // Left behind by a gateway that was killed: stop it before a second anvil opens the same state file.
    console.error(`Stopping the devnet (anvil pid ${previous.anvilPid}) left running by a gateway that exited without shutting it down.`);
    await stopOrphan(previous.anvilPid);
  }
  const release = options.claimSpawn ? await options.claimSpawn() : async () => {};
  let node: Awaited<ReturnType<typeof startAnvil>>;
  let devnet: Devnet;
  try {
    node = await startAnvil({ chainId: DEVNET_CHAIN_ID, statePath: stateFile(config.dataDir) });
    try {
      devnet = await connectDevnet(node.url);
    } catch (error) {
      await node.stop();
      throw error;
    }
  } catch (error) {
    await release();
    throw error;
  }
  config.rpcUrls[DEVNET_CHAIN_ID] = node.url;
  fs.writeFileSync(rpcUrlFile(config.dataDir), `${node.url}\n`, { mode: 0o600 });
  const owner: DevnetOwner = { gatewayPid: process.pid, anvilPid: node.pid, url: node.url };
  fs.writeFileSync(ownerFile(config.dataDir), JSON.stringify(owner), { mode: 0o600 });

  let stopped: Promise<void> | undefined;
  return {
    devnet,
    spawned: true,
    stop: () =>
      (stopped ??= (async () => {
        // Only withdraw what is still ours: another gateway may have started on this data directory since.
        if (readRunningDevnetUrl(config.dataDir) === node.url) fs.rmSync(rpcUrlFile(config.dataDir), { force: true });
        if (readOwner(config.dataDir)?.anvilPid === node.pid) fs.rmSync(ownerFile(config.dataDir), { force: true });
        if (config.rpcUrls[DEVNET_CHAIN_ID] === node.url) delete config.rpcUrls[DEVNET_CHAIN_ID];
        await node.stop(); // SIGTERM: anvil writes its state file before exiting
        await release();
      })()),
  };
}

/** The URL of the devnet a gateway on this data directory is running, if it advertised one. */
export function readRunningDevnetUrl(dataDir: string): string | undefined {
  try {
    return fs.readFileSync(rpcUrlFile(dataDir), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
