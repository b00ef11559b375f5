import { getAddress, isAddress } from 'viem';
import { Methods, Types } from 'mppx/evm';
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
 * the facilitator's verification and by the chain. `first` may answer for the
 * method's first validation (onTokensWord below); undefined, or a failure,
 * leaves it to the method.
 */
export function validatingOnce<M extends Validating>(
  method: M,
  first: (credential: ValidateArgs['credential']) => Promise<unknown> = async () => undefined,
): M {
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
        async () => (await first(parameters.credential).catch(() => undefined)) ?? validate(parameters),
        (now) => Math.min(now + VALIDATED_MS, Number.isFinite(validBeforeMs) ? validBeforeMs : 0),
      );
    },
  };
}

/**
 * mppx's validation of an `evm` charge makes its checks of the credential's fields, then recovers the signer
 * (secp256k1 in JavaScript, 2-3 ms of CPU) and then asks the facilitator to verify the same payment. With the
 * in-process facilitator that verification already proves the signer: it accepts an EOA's payment only when the
 * token, simulating the transfer, has checked the signature against `from` itself (local-facilitator.ts,
 * acceptedOnChain), and anything else only after x402's own recovery. So the credential is accepted here, as mppx
 * would accept it, when mppx's checks pass (written as mppx/dist/evm/server/Charge.js makes them: authorization
 * credentials offered, no splits, the payee, the amount, the nonce the challenge's hash, the validity window, the
 * source) and the facilitator verifies it; the answer is mppx's own success. Anything else, every refusal
 * included, is mppx's to validate, so a payer sees mppx's reasons. test/payments-settlement.test.ts compares the
 * answers with mppx's own for each way a credential can be wrong.
 *
 * The payment and offer the facilitator verifies are built as mppx builds its ask
 * (mppx/dist/x402/server/EvmCharge.js, facilitatorPayment and toPaymentRequirements), so that ask, when mppx
 * validates, is answered by the same verification (the facilitator keeps one per payment and offer).
 */
function onTokensWord(facilitator: Facilitator, token: TokenInfo) {
  return async (credential: ValidateArgs['credential'] & { source?: unknown }): Promise<unknown> => {
    // mppx marks an x402 payment it converted with a symbol: its checks differ, so it is mppx's.
    if (Object.getOwnPropertySymbols(credential).length > 0) return undefined;
    const payload = credential.payload as Record<string, unknown> | undefined;
    const challenge = credential.challenge as { request?: unknown } | undefined;
    const request = challenge?.request as Record<string, unknown> | undefined;
    const details = request?.methodDetails as { chainId?: unknown; credentialTypes?: unknown; splits?: unknown } | undefined;
    if (!payload || !challenge || !request || !details || typeof details.chainId !== 'number') return undefined;
    if (!Array.isArray(details.credentialTypes) || !details.credentialTypes.includes('authorization')) return undefined;
    if (Array.isArray(details.splits) ? details.splits.length > 0 : details.splits !== undefined) return undefined;
    const { from, nonce, to, validAfter, validBefore, value, signature } = payload;
    if (typeof from !== 'string' || typeof to !== 'string' || typeof signature !== 'string' || typeof request.recipient !== 'string') return undefined;
    if (!isAddress(from) || !isAddress(to) || !isAddress(request.recipient) || getAddress(to) !== getAddress(request.recipient)) return undefined;
    if (typeof value !== 'string' || value !== request.amount || nonce !== Types.challengeHash(challenge as never)) return undefined;
    if (typeof validAfter !== 'string' || typeof validBefore !== 'string' || !/^\d+$/.test(validAfter) || !/^\d+$/.test(validBefore)) return undefined;
    const now = BigInt(Math.floor(Date.now() / 1000));
    if (BigInt(validAfter) > now || BigInt(validBefore) <= now) return undefined;
    const source = Types.toSource({ address: getAddress(from), chainId: details.chainId });
    if (credential.source && credential.source !== source) return undefined;

    const requirements = {
      amount: request.amount,
      asset: request.currency,
      extra: { assetTransferMethod: 'eip3009', name: token.name, version: token.version },
      maxTimeoutSeconds: MPPX_MAX_TIMEOUT_SECONDS,
      network: `eip155:${details.chainId}`,
      payTo: request.recipient,
      scheme: 'exact',
    };
    const paymentPayload = {
      accepted: requirements,
      payload: { authorization: { from, nonce, to, validAfter, validBefore, value }, signature },
      x402Version: 2,
    };
    const verified = await facilitator.verify(paymentPayload as never, requirements as never);
    if (!verified.isValid) return undefined;
    return {
      challenge: credential.challenge,
      credential,
      details: { payer: getAddress(from) },
      intent: Methods.charge.intent,
      method: Methods.charge.name,
      request,
      source,
    };
  };
}

/** mppx's default x402 timeout for an `evm` charge (its maxTimeoutSeconds option, not set here). */
const MPPX_MAX_TIMEOUT_SECONDS = 300;

/** mppx's `evm` charge for one payee, as mppx ships it. */
export function mppCharge(settings: PaymentSettings, facilitator: Facilitator, token: TokenInfo, recipient: `0x${string}`) {
  return evm.charge({
    currency: token.address,
    chainId: settings.chainId,
    decimals: token.decimals,
    recipient,
    authorization: { name: token.name, version: token.version },
    // mppx's facilitator type is a structural twin of x402's (its `extra` optional); the object is the same one.
    x402: { facilitator: facilitator as unknown as NonNullable<NonNullable<Parameters<typeof evm.charge>[0]['x402']>['facilitator']> },
  });
}

/** The same charge as the gateway runs it: validated once per credential, and on the token's word with a facilitator that proves the signer. */
export function gatewayMppCharge(settings: PaymentSettings, facilitator: Facilitator, token: TokenInfo, recipient: `0x${string}`) {
  const charge = mppCharge(settings, facilitator, token, recipient);
  return facilitator.keepsVerifications ? validatingOnce(charge, onTokensWord(facilitator, token)) : validatingOnce(charge);
}

function createMpp(settings: PaymentSettings, facilitator: Facilitator, token: TokenInfo, recipient: `0x${string}`) {
  return Mppx.create({ realm: settings.realm, secretKey: settings.mppSecretKey, methods: [gatewayMppCharge(settings, facilitator, token, recipient)] });
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
