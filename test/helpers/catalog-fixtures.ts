import fs from 'node:fs';
import type { Abi, Address, Hex } from 'viem';
import type { TestChain } from './anvil.ts';

/**
 * Fixture contracts (contracts/fixtures, built by npm run build:fixtures) put
 * at the real addresses the catalog workflows read, then given state through
 * their setters: no constructor runs under anvil_setCode.
 */

interface RuntimeArtifact {
  abi: Abi;
  deployedBytecode: Hex;
}

const artifact = (file: string) => JSON.parse(fs.readFileSync(new URL(`../fixtures/${file}`, import.meta.url), 'utf8')) as RuntimeArtifact;

export const fixtures = {
  aavePool: artifact('aave-pool-fixture.json'),
  chainlinkFeed: artifact('chainlink-feed-fixture.json'),
  erc20: artifact('erc20-read-fixture.json'),
  comet: artifact('comet-fixture.json'),
  quoterV2: artifact('quoter-v2-fixture.json'),
  erc1271Wallet: artifact('erc1271-wallet-fixture.json'),
} as const;

export interface Placed {
  address: Address;
  /** Calls a setter on the placed fixture from anvil account 0 and waits for it. */
  set(functionName: string, args: readonly unknown[]): Promise<void>;
}

export async function place(chain: TestChain, fixture: RuntimeArtifact, address: Address): Promise<Placed> {
  await chain.testClient.setCode({ address, bytecode: fixture.deployedBytecode });
  const wallet = chain.walletClient(0);
  return {
    address,
    async set(functionName, args) {
      const hash = await wallet.writeContract({ address, abi: fixture.abi, functionName, args, account: wallet.account!, chain: chain.chain });
      const receipt = await chain.publicClient.waitForTransactionReceipt({ hash });
      if (receipt.status !== 'success') throw new Error(`${functionName} on ${address} reverted`);
    },
  };
}
