import { Mppx, evm } from 'mppx/server';
import type { Facilitator } from './facilitator.ts';
import { recentAnswers } from './recent-answers.ts';
import type { PaymentSettings, TokenInfo } from './settings.ts';

/**
 * The mppx server that challenges and verifies MPP `evm` charges. Its
 * recipient is fixed at creation, so there is one per payee, made on first
 * use and kept.
 */

/** How long a successful validation of one exact credential answers for it again (at most until its validBefore). */
const VALIDATED_MS = 30_000;
/** At most this many remembered validations; the oldest go first. */
const VALIDATED_MAX = 10_000;

type Validating = { validate?: ((parameters: never) => Promise<unknown>) | undefined };
type ValidateArgs = { credential: { payload?: unknown; challenge?: unknown } };

/**
 * mppx validates a credential when asked (before the payment is claimed) and
 * again inside broadcastCredential, and each validation recovers the signer
 * (secp256k1 recovery, about 2.6 ms of CPU here): a paid call paid for it
 * twice, besides the facilitator's own verification. A second validation of
 * the exact same credential (every field, signature included) within
 * VALIDATED_MS, and before the authorization's validBefore, is answered by the
 * first. Only successes are remembered. The settlement is still decided by
 * the facilitator's verification and by the chain.
 */
export function validatingOnce<M extends Validating>(method: M, beforeFirst: (credential: ValidateArgs['credential']) => void = () => {}): M {
  const validate = method.validate as ((parameters: ValidateArgs) => Promise<unknown>) | undefined;
  if (!validate) return method;
  const validated = recentAnswers<unknown>(VALIDATED_MAX);
  return {
    ...method,
    validate(parameters: ValidateArgs) {
      const payload = parameters.credential.payload as { validBefore?: unknown } | undefined;
      const validBeforeMs = Number(payload?.validBefore) * 1000;
      return validated.get(
        JSON.stringify(parameters.credential),
        () => {
          beforeFirst(parameters.credential);
          return validate(parameters);
        },
        (now) => Math.min(now + VALIDATED_MS, Number.isFinite(validBeforeMs) ? validBeforeMs : 0),
      );
    },
  };
}

/**
 * mppx's validation of an `evm` charge (run once the challenge's HMAC and the
 * expected request have been checked) recovers the signer, 2-3 ms of CPU, and
 * only then asks the facilitator to verify the same payment, which for an EOA
 * is a few reads of the chain (local-facilitator.ts). Started first, those
 * reads are under way during the recovery, and mppx's ask is answered by the
 * same verification (the facilitator keeps one per payment and offer). The
 * payment and offer are built as mppx builds them for its ask
 * (mppx/dist/x402/server/EvmCharge.js, facilitatorPayment and
 * toPaymentRequirements); were they ever to differ, the facilitator would
 * verify twice, never less: test/payments-settlement.test.ts counts one
 * simulation per MPP payment.
 */
function verifyAhead(facilitator: Facilitator, token: TokenInfo, chainId: number) {
  return (credential: ValidateArgs['credential']) => {
    const payload = credential.payload as Record<string, unknown> | undefined;
    const request = (credential.challenge as { request?: Record<string, unknown> } | undefined)?.request;
    if (!payload || !request || typeof payload.from !== 'string' || typeof payload.signature !== 'string') return;
    const requirements = {
      amount: request.amount,
      asset: request.currency,
      extra: { assetTransferMethod: 'eip3009', name: token.name, version: token.version },
      maxTimeoutSeconds: MPPX_MAX_TIMEOUT_SECONDS,
      network: `eip155:${chainId}`,
      payTo: request.recipient,
      scheme: 'exact',
    };
    const { from, nonce, to, validAfter, validBefore, value, signature } = payload;
    const paymentPayload = {
      accepted: requirements,
      payload: { authorization: { from, nonce, to, validAfter, validBefore, value }, signature },
      x402Version: 2,
    };
    facilitator.verify(paymentPayload as never, requirements as never).catch(() => {});
  };
}

/** mppx's default x402 timeout for an `evm` charge (its maxTimeoutSeconds option, not set here). */
const MPPX_MAX_TIMEOUT_SECONDS = 300;

function createMpp(settings: PaymentSettings, facilitator: Facilitator, token: TokenInfo, recipient: `0x${string}`) {
  return Mppx.create({
    realm: settings.realm,
    secretKey: settings.mppSecretKey,
    methods: [
      validatingOnce(
        evm.charge({
          currency: token.address,
          chainId: settings.chainId,
          decimals: token.decimals,
          recipient,
          authorization: { name: token.name, version: token.version },
          // mppx's facilitator type is a structural twin of x402's (its `extra` optional); the object is the same one.
          x402: { facilitator: facilitator as unknown as NonNullable<NonNullable<Parameters<typeof evm.charge>[0]['x402']>['facilitator']> },
        }),
        // Only a facilitator that keeps its verifications answers mppx's ask from the one started ahead.
        facilitator.keepsVerifications ? verifyAhead(facilitator, token, settings.chainId) : undefined,
      ),
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
