import type { PaymentSettings } from './settings.ts';

/** What a paid listing advertises (discovery cards, OpenAPI, 402s); pure, so listing views never load the payment libraries. */
export interface Pricing {
  price: { mode: 'fixed'; amount: string; currency: 'USD' };
  protocols: [
    { protocol: 'x402'; version: 2; scheme: 'exact'; network: string; asset: string | null },
    { protocol: 'mpp'; method: 'evm'; intent: 'charge'; currency: 'USDC'; chainId: number },
  ];
}

export function pricingFor(settings: PaymentSettings, price: string): Pricing {
  return {
    price: { mode: 'fixed', amount: price, currency: 'USD' },
    protocols: [
      { protocol: 'x402', version: 2, scheme: 'exact', network: settings.network, asset: settings.token ?? null },
      { protocol: 'mpp', method: 'evm', intent: 'charge', currency: 'USDC', chainId: settings.chainId },
    ],
  };
}
