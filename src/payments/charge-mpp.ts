import { getAddress } from 'viem';
import { Credential } from 'mppx';
import { paymentRequired } from './challenge.ts';
import type { PaymentContext } from './context.ts';
import { isRecord } from '../is-record.ts';
import { errorText, refusalText, SettlementPendingError, validBeforeOf, type ChargeResult, type PaidResource, type RunGate } from './paid-call.ts';
import { authorizationKey, signatureHash } from './records.ts';
import { replay, settleAndRun } from './settle.ts';

/** A paid call with an MPP `evm` charge credential: decode, replay check, validate against this route's challenge, then broadcast and run. */

export async function chargeMpp(ctx: PaymentContext, resource: PaidResource, credential: unknown, run: RunGate): Promise<ChargeResult> {
  const { settings } = ctx;
  let parsed: Credential.Credential;
  try {
    parsed = typeof credential === 'string' ? Credential.deserialize(credential) : (credential as Credential.Credential);
  } catch {
    throw await paymentRequired(ctx, resource, 'the Authorization: Payment credential is not valid base64url JSON');
  }
  const payload = isRecord(parsed) && isRecord(parsed.payload) ? parsed.payload : undefined;
  if (!payload || typeof payload.from !== 'string' || typeof payload.nonce !== 'string' || !isRecord(parsed.challenge)) {
    throw await paymentRequired(ctx, resource, 'the MPP credential carries no EIP-3009 authorization (payload.from and payload.nonce)');
  }
  const token = await ctx.ready();
  const key = authorizationKey({ chainId: settings.chainId, asset: token.address, payer: payload.from, nonce: payload.nonce });
  const sigHash = signatureHash(String(payload.signature ?? ''));
  const seen = await replay(ctx, resource, key, sigHash, run);
  if (seen) return seen;

  const mpp = ctx.mppFor(token, resource.payTo);
  // Binds the credential to this route and price: a challenge minted for another slug, amount or recipient is refused.
  const expected = { request: { amount: resource.price }, scope: resource.slug };
  try {
    await mpp.validateCredential(parsed, expected);
  } catch (error) {
    throw await paymentRequired(ctx, resource, `verification failed (${refusalText(errorText(error))})`);
  }
  return settleAndRun(
    ctx,
    resource,
    {
      key,
      signatureHash: sigHash,
      protocol: 'mpp',
      slug: resource.slug,
      network: settings.network,
      asset: token.address,
      amount: String(payload.value),
      payer: getAddress(payload.from),
      payTo: resource.payTo,
      validBefore: validBeforeOf(payload.validBefore),
    },
    run,
    async () => {
      const receipt = await mpp.broadcastCredential(parsed, expected).catch((error: unknown) => {
        const pending = ctx.settlementPending(payload.from as string, payload.nonce as string);
        throw pending ? new SettlementPendingError(pending.transaction) : error;
      });
      return { transaction: receipt.reference, receipt: { protocol: 'mpp', receipt } };
    },
  );
}
