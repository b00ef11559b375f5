import { defineChain } from 'viem';
import { keyAccount } from '../wallets/evm-key.ts';
import { HTTPFacilitatorClient, type FacilitatorClient } from '@x402/core/server';
import type { NonceManager } from '../chains/nonces.ts';
import { createLocalFacilitator } from './local-facilitator.ts';
import { reportingOpenSettlements, type OpenSettlements } from './open-settlements.ts';
import type { PaymentSettings } from './settings.ts';

/**
 * The facilitator verifies EIP-3009 authorizations and settles them on chain.
 * In-process (devnet, or FLOWGATE_FACILITATOR_URL=local): local-facilitator.ts,
 * whose account pays the settlement gas; otherwise an HTTP facilitator. Both
 * present the same {verify, settle, getSupported} object, which x402's
 * resource server and mppx's evm charge both accept.
 */

export interface Facilitator extends FacilitatorClient {
  /** The address paying settlement gas (in-process only), so the devnet can fund it. */
  signerAddress?: `0x${string}`;
  /** Keeps a successful verification briefly (in-process only): a second ask for the same payment and offer is answered by the first. */
  keepsVerifications?: boolean;
  /** After a settlement that did not succeed: whether it is still open, and its transaction when known (open-settlements.ts). */
  settlementPending?: OpenSettlements['settlementPending'];
}

/** `nonces`: the gateway's (the facilitator account's nonces, coordinated across instances on PostgreSQL). */
export function createFacilitator(settings: PaymentSettings, nonces?: NonceManager): Facilitator {
  if (settings.facilitator.kind === 'http') return reportingOpenSettlements(new HTTPFacilitatorClient({ url: settings.facilitator.url }));
  const { privateKey, rpcUrl } = settings.facilitator;
  if (!rpcUrl) {
    // Start-up must not fail over this: paid calls report it (503) when they need the facilitator.
    const missing = () =>
      Promise.reject(new Error(`The in-process facilitator needs an RPC URL for chain ${settings.chainId} (FLOWGATE_RPC_URL_${settings.chainId}).`));
    return { verify: missing, settle: missing, getSupported: missing };
  }
  const account = keyAccount(privateKey);
  const chain = defineChain({
    id: settings.chainId,
    name: `chain-${settings.chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  return {
    signerAddress: account.address,
    keepsVerifications: true,
    ...reportingOpenSettlements(createLocalFacilitator(account, chain, rpcUrl, settings.network, nonces, { confirmationMs: settings.confirmationMs })),
  };
}
