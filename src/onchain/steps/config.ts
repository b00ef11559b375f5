import { erc20Abi, type Address } from 'viem';
import type { ChainEntry } from '../../chains/catalog.ts';
import { badRequest } from '../../errors.ts';
import { selectChain } from '../chain.ts';
import { parseTokenConfig } from '../money-inputs.ts';
import { tokenDecimals } from '../token-decimals.ts';
import { organizationAccount } from '../../wallets/signer.ts';
import type { Web3Env } from './types.ts';

/** Config readers shared by the web3 steps: chain, token, wallet and routing fields. */

/** Absent, null or only whitespace: a config field left empty. */
export const isBlank = (value: unknown) => value === undefined || value === null || (typeof value === 'string' && value.trim() === '');

/**
 * The step's `network`: a chain id ("8453", 8453) or a chain name ("base").
 * This is the workflow config field, not direct execution's deprecated alias,
 * so no deprecation signal. `chainId` is read when `network` is absent (agents send it).
 * Chain triggers resolve their `network` here too (save-time checks and the watcher).
 */
export function chainOf(env: { services: Pick<Web3Env['services'], 'chains'> }, config: Record<string, unknown>): ChainEntry {
  const network = isBlank(config.network) ? config.chainId : config.network;
  if (isBlank(network))
    throw badRequest('invalid_config', 'network is required: the chain id as a string, e.g. "8453" (see list_chains).', { field: 'network' });
  return selectChain(env.services, undefined, network);
}

export function requireString(config: Record<string, unknown>, field: string, what: string): string {
  const value = config[field];
  if (isBlank(value)) throw badRequest('invalid_config', `${field} is required: ${what}.`, { field });
  if (typeof value !== 'string' && typeof value !== 'number') {
    throw badRequest('invalid_config', `${field} must be a string (${what}); got ${Array.isArray(value) ? 'an array' : typeof value}.`, {
      field,
      received: value,
    });
  }
  return String(value).trim();
}

export async function walletAddress(env: Web3Env): Promise<Address> {
  return (await organizationAccount(env.services.store, env.services.secrets, env.organizationId)).address;
}

export interface Token {
  address: Address;
  symbol: string;
  decimals: number;
}

/**
 * The ERC-20 named by `tokenConfig` (`{"mode":"custom","customToken":{address, symbol, decimals}}`
 * or `{address, symbol, decimals}`): decimals checked by tokenDecimals (the token's own
 * first); symbol from the config, else the stablecoin registry, else the token itself.
 */
export async function tokenOf(env: Web3Env, chain: ChainEntry, config: Record<string, unknown>): Promise<Token> {
  if (isBlank(config.tokenConfig)) {
    throw badRequest(
      'invalid_config',
      'tokenConfig is required: a JSON object such as {"mode":"custom","customToken":{"address":"0x...","symbol":"USDC","decimals":6}}.',
      { field: 'tokenConfig' },
    );
  }
  const parsed = parseTokenConfig(config.tokenConfig);
  if (!parsed.address) {
    throw badRequest(
      'invalid_config',
      `tokenConfig has no token address (got ${JSON.stringify(config.tokenConfig)}); give {"mode":"custom","customToken":{"address":"0x...","symbol":"USDC"}}.`,
      {
        field: 'tokenConfig',
      },
    );
  }
  const address = parsed.address;
  const known = env.services.stablecoins.lookup(chain.chainId, address);
  const client = env.services.chainClients.publicClient(chain.chainId);
  const decimals = await tokenDecimals(env.services, chain, address, parsed.decimals);
  let symbol = parsed.symbol ?? known?.symbol;
  if (symbol === undefined) {
    // The symbol is cosmetic: a token without symbol() still works.
    symbol = await client.readContract({ address, abi: erc20Abi, functionName: 'symbol' }).catch(() => '');
  }
  return { address, symbol, decimals };
}

/**
 * Routing fields every write accepts. Only the organization EOA signs on this
 * gateway, and no chain has a private-mempool RPC configured: a config that
 * asks for either is refused rather than silently sent another way.
 */
export function checkWriteRouting(config: Record<string, unknown>, chain: ChainEntry): void {
  const connection = isBlank(config.web3Connection) ? 'default' : String(config.web3Connection).trim();
  if (connection !== 'default' && connection !== 'eoa') {
    const safe = connection.startsWith('safe:');
    throw badRequest(
      'invalid_config',
      safe
        ? `web3Connection "${connection}": Safe routing is not available on this gateway; use "default" or "eoa" (the organization wallet).`
        : `web3Connection must be "default", "eoa" or "safe:<safeWalletId>" (got ${JSON.stringify(config.web3Connection)}).`,
      {
        field: 'web3Connection',
        received: config.web3Connection,
      },
    );
  }
  const wantsPrivate = config.usePrivateMempool === true || config.usePrivateMempool === 'true';
  const strict = !(config.strict === false || config.strict === 'false');
  if (wantsPrivate && strict) {
    throw badRequest(
      'invalid_config',
      `usePrivateMempool is set but this gateway has no private-mempool RPC for ${chain.name} (${chain.chainId}); nothing was sent. Set strict to false to allow the public mempool, or drop usePrivateMempool.`,
      {
        field: 'usePrivateMempool',
      },
    );
  }
}
