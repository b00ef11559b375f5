import { Mppx, evm } from 'mppx/client';
import type { Address, PrivateKeyAccount } from 'viem';
import { TEST_USDC } from '../src/chains/devnet/test-usdc.ts';

/** (Shared by the payment tests and bench/payments.ts.) An `mppx/client` that pays charges on the devnet (chain 31337) in its test USDC from `account`. */
export function devnetMppx(account: PrivateKeyAccount, usdc: Address, fetch?: typeof globalThis.fetch) {
  return Mppx.create({
    polyfill: false,
    ...(fetch ? { fetch } : {}),
    methods: [
      evm.charge({
        account,
        networks: [31337],
        currencies: [usdc],
        authorization: { name: TEST_USDC.name, version: TEST_USDC.version },
        decimals: TEST_USDC.decimals,
      }),
    ],
  });
}
