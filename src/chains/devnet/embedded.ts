import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../../config.ts';
import { startAnvil } from '../anvil.ts';
import { connectDevnet, type Devnet } from './devnet.ts';
import { DEVNET_CHAIN_ID } from './test-usdc.ts';

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

export async function openDevnet(config: Config): Promise<RunningDevnet | null> {
  if (config.devnet === 'off') return null;

  const configured = config.rpcUrls[DEVNET_CHAIN_ID];
  if (configured) {
    const devnet = await connectDevnet(configured).catch((error: Error) => {
      throw new Error(`FLOWGATE_RPC_URL_${DEVNET_CHAIN_ID} is set but that devnet could not be used: ${error.message.split('\n')[0]} (start it, unset the variable, or set FLOWGATE_DEVNET=off)`);
    });
    return { devnet, spawned: false, stop: async () => {} };
  }

  fs.mkdirSync(devnetDirectory(config.dataDir), { recursive: true, mode: 0o700 });
  const node = await startAnvil({ chainId: DEVNET_CHAIN_ID, statePath: stateFile(config.dataDir) });
  let devnet: Devnet;
  try {
    devnet = await connectDevnet(node.url);
  } catch (error) {
    await node.stop();
    throw error;
  }
  config.rpcUrls[DEVNET_CHAIN_ID] = node.url;
  fs.writeFileSync(rpcUrlFile(config.dataDir), `${node.url}\n`, { mode: 0o600 });

  let stopped: Promise<void> | undefined;
  return {
    devnet,
    spawned: true,
    stop: () =>
      (stopped ??= (async () => {
        // Only withdraw what is still ours: another gateway may have started on this data directory since.
        if (readRunningDevnetUrl(config.dataDir) === node.url) fs.rmSync(rpcUrlFile(config.dataDir), { force: true });
        if (config.rpcUrls[DEVNET_CHAIN_ID] === node.url) delete config.rpcUrls[DEVNET_CHAIN_ID];
        await node.stop(); // SIGTERM: anvil writes its state file before exiting
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
