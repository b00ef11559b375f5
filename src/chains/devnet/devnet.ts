import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  formatUnits,
  getAddress,
  isAddress,
  parseEther,
  parseUnits,
  type Address,
  type PublicClient,
} from 'viem';
import { badRequest } from '../../errors.ts';
import { waitForReceipt } from '../receipt-watcher.ts';
import { rpcTransport } from '../rpc-transport.ts';
import { DEVNET_CHAIN_ID, TEST_USDC, TEST_USDC_ADDRESS, testUsdcAbi, testUsdcBytecode, testUsdcDeployer } from './test-usdc.ts';

/**
 * A connected devnet (chain 31337, anvil): makes sure the test USDC is
 * deployed and tops up any address with ETH (anvil_setBalance) and USDC
 * (minted by the token's owner). Knows nothing about how the node was started;
 * see embedded.ts for that.
 */

export interface DevnetBalances {
  address: Address;
  /** Human decimal strings (ether, USDC). */
  eth: string;
  usdc: string;
}

export interface DevnetFundAmounts {
  /** Human decimal strings, e.g. "1.5"; parsed exactly (no rounding, no exponent, not negative). */
  eth?: string;
  usdc?: string;
}

export interface Devnet {
  chainId: typeof DEVNET_CHAIN_ID;
  usdcAddress: Address;
  /** Adds the amounts to the address's balances and resolves with the new balances. Bad input throws a 400 ServiceError. */
  fund(address: string, amounts: DevnetFundAmounts): Promise<DevnetBalances>;
  balances(address: string): Promise<DevnetBalances>;
}

/** What a new organization wallet gets on the devnet (and `flowgate devnet fund` without amounts). */
export const DEVNET_DEFAULT_FUNDING = { eth: '100', usdc: '10000' } as const;

export function parseDevnetAddress(address: string): Address {
  // Strict: all-lowercase or exact EIP-55; a mixed-case typo is refused rather than silently accepted.
  if (typeof address !== 'string' || !isAddress(address.trim())) throw badRequest('invalid_input', `Invalid address: ${address}`);
  return getAddress(address.trim());
}

/** A non-negative decimal with at most `decimals` fraction digits, as base units. */
export function parseDevnetAmount(value: string, decimals: number, label: string): bigint {
  const text = typeof value === 'string' ? value.trim() : '';
  const match = /^(\d+)(?:\.(\d+))?$/.exec(text);
  if (!match) throw badRequest('invalid_input', `Invalid ${label} amount: "${value}" (expected a non-negative decimal number like 1.5)`);
  if ((match[2]?.length ?? 0) > decimals) throw badRequest('invalid_input', `Invalid ${label} amount: "${value}" has more than ${decimals} decimal places`);
  return parseUnits(text, decimals);
}

/**
 * How long a deployment or mint may take to be mined. Read through the gateway's receipt watcher: viem's
 * waitForTransactionReceipt polls every 4 s on a chain without a block time, and once the node has made some
 * blocks a mint waited out that interval (4.0 s per `flowgate devnet fund` after 1,500 blocks, instead of 4 ms).
 */
const RECEIPT_TIMEOUT_MS = 30_000;

/** Connects to the devnet at rpcUrl and deploys the test USDC there when it is missing. */
export async function connectDevnet(rpcUrl: string): Promise<Devnet> {
  const chain = defineChain({
    id: DEVNET_CHAIN_ID,
    name: 'Flowgate Devnet',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const transport = rpcTransport(rpcUrl, { retryCount: 1, timeout: 10_000 });
  const publicClient = createPublicClient({ chain, transport });
  const testClient = createTestClient({ chain, transport, mode: 'anvil' });
  const deployerClient = createWalletClient({ chain, transport, account: testUsdcDeployer });

  const chainId = await publicClient.getChainId();
  if (chainId !== DEVNET_CHAIN_ID) throw new Error(`The devnet node answers with chain id ${chainId}, not ${DEVNET_CHAIN_ID}`);

  // The deployer pays gas for the deployment and for mints; anvil_setBalance keeps it topped up.
  async function fuelDeployer() {
    const balance = await publicClient.getBalance({ address: testUsdcDeployer.address });
    if (balance < parseEther('1')) await testClient.setBalance({ address: testUsdcDeployer.address, value: parseEther('10') });
  }

  async function ensureTestUsdc() {
    const code = await publicClient.getCode({ address: TEST_USDC_ADDRESS });
    if (code && code !== '0x') return; // persisted state, or another gateway deployed it on this node
    const nonce = await publicClient.getTransactionCount({ address: testUsdcDeployer.address });
    if (nonce !== 0) {
      throw new Error(
        `The test USDC deployer ${testUsdcDeployer.address} has already sent ${nonce} transaction(s) on this devnet, but ${TEST_USDC_ADDRESS} holds no contract; use a fresh devnet state`,
      );
    }
    await fuelDeployer();
    const hash = await deployerClient.deployContract({ abi: testUsdcAbi, bytecode: testUsdcBytecode, args: [testUsdcDeployer.address] });
    const receipt = await waitForReceipt(publicClient as PublicClient, hash, RECEIPT_TIMEOUT_MS);
    if (receipt.status !== 'success' || receipt.contractAddress?.toLowerCase() !== TEST_USDC_ADDRESS.toLowerCase()) {
      throw new Error(`Deploying the test USDC failed (transaction ${hash}, status ${receipt.status})`);
    }
  }

  await ensureTestUsdc();

  async function balances(address: string): Promise<DevnetBalances> {
    const account = parseDevnetAddress(address);
    const [wei, units] = await Promise.all([
      publicClient.getBalance({ address: account }),
      publicClient.readContract({ address: TEST_USDC_ADDRESS, abi: testUsdcAbi, functionName: 'balanceOf', args: [account] }),
    ]);
    return { address: account, eth: formatUnits(wei, 18), usdc: formatUnits(units, TEST_USDC.decimals) };
  }

  // One funding at a time: the ETH top-up is read-modify-write and mints share the deployer's nonce.
  let queue: Promise<unknown> = Promise.resolve();
  const serialize = <T>(task: () => Promise<T>): Promise<T> => {
    const run = queue.then(task, task);
    queue = run.catch(() => undefined);
    return run;
  };

  async function fund(address: string, amounts: DevnetFundAmounts): Promise<DevnetBalances> {
    // Validate everything before touching the chain.
    const account = parseDevnetAddress(address);
    const wei = amounts.eth === undefined ? 0n : parseDevnetAmount(amounts.eth, 18, 'ETH');
    const units = amounts.usdc === undefined ? 0n : parseDevnetAmount(amounts.usdc, TEST_USDC.decimals, 'USDC');
    return serialize(async () => {
      if (wei > 0n) {
        const current = await publicClient.getBalance({ address: account });
        await testClient.setBalance({ address: account, value: current + wei });
      }
      if (units > 0n) {
        await fuelDeployer();
        const hash = await deployerClient.writeContract({ address: TEST_USDC_ADDRESS, abi: testUsdcAbi, functionName: 'mint', args: [account, units] });
        const receipt = await waitForReceipt(publicClient as PublicClient, hash, RECEIPT_TIMEOUT_MS);
        if (receipt.status !== 'success') throw new Error(`Minting test USDC failed (transaction ${hash})`);
      }
      return balances(account);
    });
  }

  return { chainId: DEVNET_CHAIN_ID, usdcAddress: TEST_USDC_ADDRESS, fund, balances };
}

/**
 * Gives an address the default funding when it holds neither ETH nor USDC: a
 * new organization wallet (or one drained to exactly zero). A restart on
 * persisted state leaves a used wallet's balances alone.
 */
export async function fundIfEmpty(devnet: Devnet, address: string): Promise<DevnetBalances> {
  const current = await devnet.balances(address);
  if (current.eth !== '0' || current.usdc !== '0') return current;
  return devnet.fund(address, DEVNET_DEFAULT_FUNDING);
}
