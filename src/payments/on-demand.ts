import { addressOfKey } from '../wallets/evm-key.ts';
import type { NonceManager } from '../chains/nonces.ts';
import type { Store } from '../store/db.ts';
import { pricingFor } from './pricing.ts';
import type { PaymentsService } from './service.ts';
import type { PaymentSettings } from './settings.ts';

/**
 * The payments service as the gateway holds it: settings, the facilitator's
 * address and prices answer at once, while the x402 and mppx libraries
 * (service.ts, facilitator.ts; with mppx come viem's ~700 chain modules) load
 * on the first paid call. Start-up and idle memory stay free of them (README
 * "Start and memory"); the first paid call waits for the import once.
 */
export function createOnDemandPaymentsService(deps: {
  store: Store;
  settings: PaymentSettings;
  rpcUrl: string | undefined;
  nonces: NonceManager;
}): PaymentsService {
  const { settings } = deps;
  let loaded: PaymentsService | undefined;
  let loading: Promise<PaymentsService> | undefined;
  const load = () =>
    (loading ??= Promise.all([import('./service.ts'), import('./facilitator.ts')]).then(
      ([{ createPaymentsService }, { createFacilitator }]) =>
        (loaded = createPaymentsService({ ...deps, facilitator: createFacilitator(settings, deps.nonces) })),
      (error: unknown) => {
        loading = undefined;
        throw error;
      },
    ));
  /** A receipt only comes out of charge(), so the libraries are loaded by the time one is rendered. */
  const whenCharged = () => {
    if (!loaded) throw new Error('payment receipt rendered before any charge');
    return loaded;
  };
  const { facilitator } = settings;
  return {
    settings,
    // As createFacilitator: the in-process facilitator (which needs an RPC URL) pays gas from this key's address.
    facilitatorAddress: facilitator.kind === 'local' && facilitator.rpcUrl ? addressOfKey(facilitator.privateKey) : undefined,
    pricing: (price) => pricingFor(settings, price),
    charge: async (resource, credentials, run) => (await load()).charge(resource, credentials, run),
    receiptHeaders: (receipt) => whenCharged().receiptHeaders(receipt),
    receiptMeta: (receipt) => whenCharged().receiptMeta(receipt),
    // Only asked when a payment is unresolved, which only a charge (in this process or before it) leaves behind.
    settlementOutcome: async (client, row) => (await load()).settlementOutcome(client, row),
  };
}
