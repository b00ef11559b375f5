import { Mppx, evm } from 'mppx/server';
import type { Facilitator } from './facilitator.ts';
import type { PaymentSettings, TokenInfo } from './settings.ts';

/**
 * The mppx server that challenges and verifies MPP `evm` charges. Its
 * recipient is fixed at creation, so there is one per payee, made on first
 * use and kept.
 */

function createMpp(settings: PaymentSettings, facilitator: Facilitator, token: TokenInfo, recipient: `0x${string}`) {
  return Mppx.create({
    realm: settings.realm,
    secretKey: settings.mppSecretKey,
    methods: [
      evm.charge({
        currency: token.address,
        chainId: settings.chainId,
        decimals: token.decimals,
        recipient,
        authorization: { name: token.name, version: token.version },
        // mppx's facilitator type is a structural twin of x402's (its `extra` optional); the object is the same one.
        x402: { facilitator: facilitator as unknown as NonNullable<NonNullable<Parameters<typeof evm.charge>[0]['x402']>['facilitator']> },
      }),
    ],
  });
}

export type MppServer = ReturnType<typeof createMpp>;

export function mppServers(settings: PaymentSettings, facilitator: Facilitator): (token: TokenInfo, recipient: `0x${string}`) => MppServer {
  const byRecipient = new Map<string, MppServer>();
  return (token, recipient) => {
    let mpp = byRecipient.get(recipient);
    if (!mpp) byRecipient.set(recipient, (mpp = createMpp(settings, facilitator, token, recipient)));
    return mpp;
  };
}
