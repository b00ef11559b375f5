import { createPublicClient, createTestClient, createWalletClient, http, parseEther, type Address, type Chain } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { startAnvil, type AnvilNode } from '../../src/chains/anvil.ts';

/** A real anvil node for a test file, with viem clients and anvil's prefunded accounts. */

export const ANVIL_MNEMONIC = 'test test test test test test test test test test test junk';

export interface TestChain extends AnvilNode {
  chain: Chain;
  publicClient: ReturnType<typeof createPublicClient>;
  testClient: ReturnType<typeof createTestClient>;
  /** anvil's prefunded account `index` (10,000 ETH each). */
  account(index: number): ReturnType<typeof mnemonicToAccount>;
  walletClient(index: number): ReturnType<typeof createWalletClient>;
  setBalance(address: Address, ether: string): Promise<void>;
}

export async function startTestChain(chainId = 31337, args: readonly string[] = []): Promise<TestChain> {
  const node = await startAnvil({ chainId, args });
  const chain: Chain = {
    id: chainId,
    name: `anvil-${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [node.url] } },
  };
  const transport = http(node.url);
  const publicClient = createPublicClient({ chain, transport });
  const testClient = createTestClient({ chain, transport, mode: 'anvil' });
  const account = (index: number) => mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: index });
  return {
    ...node,
    chain,
    publicClient,
    testClient,
    account,
    walletClient: (index) => createWalletClient({ chain, transport, account: account(index) }),
    setBalance: (address, ether) => testClient.setBalance({ address, value: parseEther(ether) }),
  };
}
