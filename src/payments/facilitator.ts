import { createWalletClient, defineChain, http, publicActions } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { HTTPFacilitatorClient, type FacilitatorClient } from '@x402/core/server';
import { x402Facilitator } from '@x402/core/facilitator';
import { toFacilitatorEvmSigner } from '@x402/evm';
import { ExactEvmScheme as ExactEvmFacilitatorScheme } from '@x402/evm/exact/facilitator';
import type { PaymentSettings } from './settings.ts';

/**
 * The facilitator verifies EIP-3009 authorizations and settles them on chain.
 * In-process (devnet, or FLOWGATE_FACILITATOR_URL=local): an x402Facilitator
 * whose signer pays the settlement gas; otherwise an HTTP facilitator. Both
 * present the same {verify, settle, getSupported} object, which x402's
 * resource server and mppx's evm charge both accept.
 */

export interface Facilitator extends FacilitatorClient {
  /** The address paying settlement gas (in-process only), so the devnet can fund it. */
  signerAddress?: `0x${string}`;
}

export function createFacilitator(settings: PaymentSettings): Facilitator {
  if (settings.facilitator.kind === 'http') return new HTTPFacilitatorClient({ url: settings.facilitator.url });
  const { privateKey, rpcUrl } = settings.facilitator;
  if (!rpcUrl) {
    // Start-up must not fail over this: paid calls report it (503) when they need the facilitator.
    const missing = () =>
      Promise.reject(new Error(`The in-process facilitator needs an RPC URL for chain ${settings.chainId} (FLOWGATE_RPC_URL_${settings.chainId}).`));
    return { verify: missing, settle: missing, getSupported: missing };
  }
  const account = privateKeyToAccount(privateKey);
  const chain = defineChain({
    id: settings.chainId,
    name: `chain-${settings.chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const client = createWalletClient({ account, chain, transport: http(rpcUrl) }).extend(publicActions);
  const signer = toFacilitatorEvmSigner({ ...client, address: account.address } as unknown as Parameters<typeof toFacilitatorEvmSigner>[0]);
  const facilitator = new x402Facilitator().register(settings.network, new ExactEvmFacilitatorScheme(signer));
  let settling: Promise<unknown> = Promise.resolve();
  return {
    signerAddress: account.address,
    verify: (payload, requirements) => facilitator.verify(payload, requirements),
    // Every settlement is a transaction from this one account: run them one at a time, or concurrent
    // paid calls collide on its nonce ("nonce too low") and fail after the payer already signed.
    settle: (payload, requirements) => {
      const settled = settling.then(() => facilitator.settle(payload, requirements));
      settling = settled.catch(() => undefined);
      return settled;
    },
    getSupported: async () => facilitator.getSupported() as Awaited<ReturnType<FacilitatorClient['getSupported']>>,
  };
}
