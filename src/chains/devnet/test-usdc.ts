import fs from 'node:fs';
import { getContractAddress, keccak256, stringToHex, type Address, type Hex } from 'viem';
import { keyAccount } from '../../wallets/evm-key.ts';
import { testUsdcAbi } from './test-usdc.abi.ts';

/**
 * The devnet's test USDC: the committed artifact (rebuild with
 * `npm run build:contracts`), its deployer and its deterministic address.
 */

export { testUsdcAbi };

export { DEVNET_CHAIN_ID } from './chain-id.ts';

/** What x402/MPP clients put in the EIP-712 domain, same as Circle's USDC. */
export const TEST_USDC = { name: 'USD Coin', symbol: 'USDC', decimals: 6, version: '2' } as const;

interface Artifact {
  abi: unknown[];
  bytecode: Hex;
}

export const testUsdcBytecode: Hex = (JSON.parse(fs.readFileSync(new URL('./test-usdc.artifact.json', import.meta.url), 'utf8')) as Artifact).bytecode;

/**
 * A deliberately public key, derived from a fixed label: it deploys the test
 * USDC at nonce 0 (so the token has the same address on every fresh devnet)
 * and owns it (so it can mint). It holds nothing of value anywhere.
 */
const DEPLOYER_KEY = keccak256(stringToHex('flowgate devnet test USDC deployer v1'));
export const testUsdcDeployer = keyAccount(DEPLOYER_KEY);

export const TEST_USDC_ADDRESS: Address = getContractAddress({ from: testUsdcDeployer.address, nonce: 0n });
