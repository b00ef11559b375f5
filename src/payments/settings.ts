import { createHmac } from 'node:crypto';
import { createPublicClient, http, type Address } from 'viem';
import type { Config } from '../config.ts';
import type { ChainCatalog } from '../chains/catalog.ts';

/**
 * Where paid calls are paid: chain, token and facilitator. Explicit
 * configuration wins; otherwise the devnet (when the gateway runs one) with
 * its test USDC and the in-process facilitator, so a fresh `npm start` takes
 * paid calls offline; otherwise Base USDC through a facilitator URL.
 */

export interface DevnetPaymentInfo {
  chainId: number;
  usdcAddress: string;
}

export type FacilitatorSetting = { kind: 'local'; privateKey: `0x${string}`; rpcUrl: string | undefined } | { kind: 'http'; url: string };

export interface PaymentSettings {
  chainId: number;
  /** CAIP-2, e.g. eip155:31337. */
  network: `eip155:${number}`;
  /** Undefined when nothing names a token for the chain: paid calls then answer 503. */
  token: Address | undefined;
  facilitator: FacilitatorSetting;
  /** HMAC key for MPP challenge ids (stateless challenges that only this deployment can mint). */
  mppSecretKey: string;
  realm: string;
  /** How long a settlement's transaction is waited for before the call answers with the payment still settling. */
  confirmationMs: number;
}

/** Tokens whose EIP-3009 domain and decimals are known without asking the chain. */
export const KNOWN_USDC: Readonly<Record<number, Address>> = {
  8453: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
  84532: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
  1: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
};

export const DEFAULT_FACILITATOR_URL = 'https://x402.org/facilitator';
const LOCAL_CHAIN_IDS = new Set([31337]);

/** A purpose-bound secret from the master key: never the key itself. */
export const deriveSecret = (masterKey: Buffer, purpose: string) => createHmac('sha256', masterKey).update(`flowgate:${purpose}`).digest('hex');

export function resolvePaymentSettings(config: Config, chains: ChainCatalog, masterKey: Buffer, devnet: DevnetPaymentInfo | null | undefined): PaymentSettings {
  const chainId = config.payments.chainId ?? devnet?.chainId ?? 8453;
  const onDevnet = devnet !== null && devnet !== undefined && devnet.chainId === chainId;
  const token = config.payments.token ?? (onDevnet ? (devnet.usdcAddress as Address) : KNOWN_USDC[chainId]);
  const url = config.payments.facilitatorUrl ?? (onDevnet || LOCAL_CHAIN_IDS.has(chainId) ? 'local' : DEFAULT_FACILITATOR_URL);
  const facilitator: FacilitatorSetting =
    url === 'local'
      ? { kind: 'local', privateKey: config.payments.facilitatorKey ?? `0x${deriveSecret(masterKey, 'x402-facilitator-key')}`, rpcUrl: chains.rpcUrl(chainId) }
      : { kind: 'http', url };
  return {
    chainId,
    network: `eip155:${chainId}`,
    token,
    facilitator,
    mppSecretKey: deriveSecret(masterKey, 'mpp-challenge'),
    realm: new URL(config.baseUrl).host,
    confirmationMs: config.payments.confirmationMs,
  };
}

export interface TokenInfo {
  address: Address;
  /** EIP-712 domain of transferWithAuthorization. */
  name: string;
  version: string;
  decimals: number;
}

const ERC20_META = [
  { type: 'function', name: 'name', stateMutability: 'view', inputs: [], outputs: [{ type: 'string' }] },
  { type: 'function', name: 'version', stateMutability: 'view', inputs: [], outputs: [{ type: 'string' }] },
  { type: 'function', name: 'decimals', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint8' }] },
] as const;

/** Reads the token's EIP-3009 domain (name, version) and decimals once; USDC on known chains needs no RPC. */
export async function readTokenInfo(settings: PaymentSettings, rpcUrl: string | undefined): Promise<TokenInfo> {
  const address = settings.token!;
  if (KNOWN_USDC[settings.chainId]?.toLowerCase() === address.toLowerCase()) {
    return { address, name: settings.chainId === 84532 ? 'USDC' : 'USD Coin', version: '2', decimals: 6 };
  }
  if (!rpcUrl) throw new Error(`No RPC URL for payment chain ${settings.chainId}; set FLOWGATE_RPC_URL_${settings.chainId}`);
  const client = createPublicClient({ transport: http(rpcUrl) });
  const [name, decimals] = await Promise.all([
    client.readContract({ address, abi: ERC20_META, functionName: 'name' }),
    client.readContract({ address, abi: ERC20_META, functionName: 'decimals' }),
  ]);
  // FiatToken-style tokens expose version(); EIP-3009 tokens without it conventionally sign with "1".
  const version = await client.readContract({ address, abi: ERC20_META, functionName: 'version' }).catch(() => '1');
  return { address, name, version, decimals };
}
