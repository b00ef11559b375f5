import { getAddress } from 'viem';
import { x402ResourceServer } from '@x402/core/server';
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader } from '@x402/core/http';
import type { PaymentPayload, PaymentRequired, PaymentRequirements, SettleResponse } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/server';
import { Challenge, Credential, Receipt } from 'mppx';
import { Mppx, evm } from 'mppx/server';
import type { Store } from '../store/db.ts';
import { ServiceError } from '../errors.ts';
import { toAtomicUnits } from './amount.ts';
import type { Facilitator } from './facilitator.ts';
import { attachExecution, authorizationKey, claimPayment, findPayment, markFailed, markSettled, releasePayment, signatureHash } from './records.ts';
import { readTokenInfo, type PaymentSettings, type TokenInfo } from './settings.ts';

/**
 * Pay-per-call: the dual 402 (x402 v2 `PAYMENT-REQUIRED` and MPP
 * `WWW-Authenticate: Payment` on one response), verification, and settlement.
 *
 * Order of a paid call, failing closed at every step:
 *   credential → replay check (authorization already recorded → original execution)
 *   → verify with the facilitator → claim the payment record
 *   → create the run without letting it start → settle → let the run start.
 * A run that cannot be created leaves the payment unsettled; a settlement
 * that fails abandons the run, which never executes.
 */

export const MCP_X402_PAYMENT = 'x402/payment';
export const MCP_X402_RESPONSE = 'x402/payment-response';
export const MCP_MPP_CREDENTIAL = 'org.paymentauth/credential';
export const MCP_MPP_RECEIPT = 'org.paymentauth/receipt';
export const MCP_MPP_REQUIRED = 'org.paymentauth/payment-required';

export interface PaidResource {
  slug: string;
  title: string;
  description: string;
  /** Decimal USD. */
  price: string;
  payTo: `0x${string}`;
  /** Absolute URL of the call (x402 `resource.url`). */
  url: string;
  inputSchema: Record<string, unknown>;
  outputFields: Record<string, string>;
}

/** Credentials as they arrived: header strings over REST, `_meta` objects over MCP. */
export interface PaymentCredentials {
  x402?: unknown;
  mpp?: unknown;
}

export interface RunGate {
  /** Creates the execution without letting it run; throws when the run cannot start. */
  prepare(): Promise<string>;
  /** Payment settled: the run may start. */
  release(executionId: string): Promise<void>;
  /** Settlement failed: the run never starts. */
  abandon(executionId: string, reason: string): Promise<void>;
}

export type PaymentReceipt = { protocol: 'x402'; settlement: SettleResponse } | { protocol: 'mpp'; receipt: Receipt.Receipt };

export interface ChargeResult {
  executionId: string;
  /** The same payment was presented before: its original execution, nothing run or charged again. */
  replayed: boolean;
  receipt: PaymentReceipt;
}

export interface Pricing {
  price: { mode: 'fixed'; amount: string; currency: 'USD' };
  protocols: [
    { protocol: 'x402'; version: 2; scheme: 'exact'; network: string; asset: string | null },
    { protocol: 'mpp'; method: 'evm'; intent: 'charge'; currency: 'USDC'; chainId: number },
  ];
}

export interface PaymentsService {
  settings: PaymentSettings;
  /** The in-process facilitator's gas-paying address; undefined with an HTTP facilitator. */
  facilitatorAddress: `0x${string}` | undefined;
  pricing(price: string): Pricing;
  charge(resource: PaidResource, credentials: PaymentCredentials, run: RunGate): Promise<ChargeResult>;
  /** Response headers (REST) and result `_meta` (MCP) for a receipt. */
  receiptHeaders(receipt: PaymentReceipt): Record<string, string>;
  receiptMeta(receipt: PaymentReceipt): Record<string, unknown>;
}

/** A 402 that carries what each edge needs: headers (REST), structured content and `_meta` (MCP). */
export class PaymentRequiredError extends ServiceError {
  constructor(
    message: string,
    details: Record<string, unknown>,
    headers: Record<string, string>,
    readonly mcp: { structuredContent: Record<string, unknown>; meta: Record<string, unknown> },
  ) {
    super(402, 'payment_required', message, details, headers);
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const normalUrl = (url: unknown) => {
  try {
    return typeof url === 'string' ? new URL(url).href : undefined;
  } catch {
    return undefined;
  }
};

/**
 * x402 v2 payloads echo the challenge's `resource`; one made for another
 * route is refused. The EIP-3009 signature covers only the transfer (payer,
 * payee, value, validity, nonce), so this check stops honest clients and
 * leaked-but-unedited payments; the payment record (bound to the first slug
 * an authorization is presented to, see records.ts) is what holds against an
 * edited one.
 */
function wrongRoute(resource: PaidResource, payload: unknown): string | undefined {
  if (!isRecord(payload)) return 'the x402 payment is not a JSON object';
  const paidFor = isRecord(payload.resource) ? payload.resource.url : undefined;
  if (paidFor === undefined) return 'the x402 payment does not name the resource it pays for (resource.url); pay the challenge of this route';
  if (normalUrl(paidFor) !== normalUrl(resource.url))
    return `this payment was made for ${String(paidFor)}, not for ${resource.url}; pay this route's own challenge`;
  return undefined;
}
const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

export function createPaymentsService(deps: {
  store: Store;
  settings: PaymentSettings;
  facilitator: Facilitator;
  rpcUrl: string | undefined;
}): PaymentsService {
  const { store, settings, facilitator } = deps;
  const resourceServer = new x402ResourceServer(facilitator).register(settings.network, new ExactEvmScheme());
  let ready: Promise<TokenInfo> | undefined;
  const mppByRecipient = new Map<string, ReturnType<typeof createMpp>>();

  function createMpp(token: TokenInfo, recipient: `0x${string}`) {
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

  /** Token metadata and the facilitator's supported kinds, once; a failure is retried on the next call. */
  function init(): Promise<TokenInfo> {
    if (!settings.token) {
      return Promise.reject(
        new ServiceError(
          503,
          'payments_unavailable',
          `Paid calls are not configured on this gateway: no payment token for chain ${settings.chainId}. The operator sets FLOWGATE_PAYMENT_TOKEN.`,
        ),
      );
    }
    ready ??= Promise.all([readTokenInfo(settings, deps.rpcUrl), resourceServer.initialize()])
      .then(([token]) => token)
      .catch((error) => {
        ready = undefined;
        console.error('[flowgate] payments are unavailable:', error);
        throw new ServiceError(
          503,
          'payments_unavailable',
          'The payment facilitator or payment chain is unreachable right now; nothing was charged. Retry later.',
        );
      });
    return ready;
  }

  const mppFor = (token: TokenInfo, recipient: `0x${string}`) => {
    let mpp = mppByRecipient.get(recipient);
    if (!mpp) mppByRecipient.set(recipient, (mpp = createMpp(token, recipient)));
    return mpp;
  };

  async function requirementsFor(resource: PaidResource, token: TokenInfo): Promise<PaymentRequirements[]> {
    return resourceServer.buildPaymentRequirements({
      scheme: 'exact',
      network: settings.network,
      payTo: resource.payTo,
      price: { amount: toAtomicUnits(resource.price, token.decimals), asset: token.address, extra: { name: token.name, version: token.version } },
      maxTimeoutSeconds: 300,
    });
  }

  /** Bazaar discovery metadata: how to call the resource and what it returns. */
  const bazaar = (resource: PaidResource) => ({
    info: {
      input: { type: 'http', method: 'POST', bodyType: 'json' },
      output: { type: 'json', fields: resource.outputFields },
    },
    schema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {
        input: { type: 'object', properties: { type: { const: 'http' }, method: { const: 'POST' }, bodyType: { const: 'json' }, body: resource.inputSchema } },
        output: { type: 'object' },
      },
    },
  });

  async function paymentRequired(resource: PaidResource, reason?: string): Promise<PaymentRequiredError> {
    const token = await init();
    const accepts = await requirementsFor(resource, token);
    const message = reason
      ? `Payment refused: ${reason}. Nothing was run or charged; pay ${resource.price} USD with a fresh payment.`
      : `Payment required: ${resource.slug} costs ${resource.price} USD per call.`;
    const x402: PaymentRequired = await resourceServer.createPaymentRequiredResponse(
      accepts,
      { url: resource.url, description: resource.description, mimeType: 'application/json' },
      message,
      { bazaar: bazaar(resource) },
    );
    const challenge = await mppFor(token, resource.payTo).challenge.evm.charge({ amount: resource.price, description: resource.title, scope: resource.slug });
    const offer = accepts[0]!;
    const body = {
      ...x402,
      ...(reason ? { reason } : {}),
      price: { mode: 'fixed', amount: resource.price, currency: 'USD' },
      offers: [
        {
          protocol: 'x402',
          scheme: offer.scheme,
          network: offer.network,
          asset: offer.asset,
          amount: offer.amount,
          payTo: offer.payTo,
          challengeHeader: 'PAYMENT-REQUIRED',
          retryHeader: 'PAYMENT-SIGNATURE',
          mcpMetaKey: MCP_X402_PAYMENT,
        },
        {
          protocol: 'mpp',
          method: 'evm',
          intent: 'charge',
          currency: 'USDC',
          asset: token.address,
          amount: offer.amount,
          recipient: resource.payTo,
          chainId: settings.chainId,
          challengeHeader: 'WWW-Authenticate',
          retryHeader: 'Authorization: Payment <credential>',
          mcpMetaKey: MCP_MPP_CREDENTIAL,
        },
      ],
      howToPay:
        `Sign an EIP-3009 transferWithAuthorization of ${offer.amount} atomic units (${resource.price} USD) of ${token.address} on ${settings.network} to ${resource.payTo}, then repeat this exact request with ONE of: ` +
        `the x402 header PAYMENT-SIGNATURE (e.g. @x402/fetch wrapFetchWithPayment) or the MPP header Authorization: Payment (e.g. mppx/client). Sending both is a 400.`,
      mpp: { challenges: [challenge] },
    };
    return new PaymentRequiredError(
      message,
      Object.fromEntries(Object.entries(body).filter(([k]) => k !== 'error')),
      { 'PAYMENT-REQUIRED': encodePaymentRequiredHeader(x402), 'WWW-Authenticate': Challenge.serialize(challenge), 'Cache-Control': 'no-store' },
      { structuredContent: body, meta: { [MCP_MPP_REQUIRED]: { challenges: [challenge] } } },
    );
  }

  /** The record of an authorization seen before: its original execution, or a clear refusal. */
  async function replay(resource: PaidResource, key: string, sigHash: string): Promise<ChargeResult | undefined> {
    const existing = await findPayment(store, key);
    if (!existing) return undefined;
    // Payer and nonce are public once settled; only the holder of the exact signed payment gets its execution back.
    if (existing.signature_hash !== sigHash) throw await paymentRequired(resource, 'this authorization (payer and nonce) was already used');
    if (existing.listing_slug !== resource.slug) {
      const why =
        existing.status === 'released'
          ? `this payment was presented for ${existing.listing_slug} first and can only pay for that workflow`
          : `this payment was already used for a call to ${existing.listing_slug}`;
      throw await paymentRequired(resource, why);
    }
    // Verified earlier but never settled (the run could not start): verify again and take the record back.
    if (existing.status === 'released') return undefined;
    if (existing.status === 'failed') throw await paymentRequired(resource, `this payment failed to settle earlier (${existing.error ?? 'unknown reason'})`);
    if (existing.status !== 'settled' || !existing.execution_id || !existing.receipt) {
      throw new ServiceError(409, 'payment_in_progress', 'This payment is being processed by another request; retry in a moment to get its executionId.', {
        retryable: true,
      });
    }
    const receipt = JSON.parse(existing.receipt) as PaymentReceipt;
    return { executionId: existing.execution_id, replayed: true, receipt };
  }

  /** Claim → prepare run → settle → release; undoes exactly what happened when a step fails. */
  async function settleAndRun(
    resource: PaidResource,
    claim: Parameters<typeof claimPayment>[1],
    run: RunGate,
    settle: () => Promise<{ transaction: string; receipt: PaymentReceipt }>,
  ): Promise<ChargeResult> {
    const claimed = await claimPayment(store, claim);
    if (!claimed) {
      const replayed = await replay(resource, claim.key, claim.signatureHash);
      if (replayed) return replayed;
      throw new ServiceError(409, 'payment_in_progress', 'This payment is being processed by another request; retry in a moment.', { retryable: true });
    }
    let executionId: string;
    try {
      executionId = await run.prepare();
    } catch (error) {
      await releasePayment(store, claimed.id);
      throw error;
    }
    await attachExecution(store, claimed.id, executionId);
    let settled: { transaction: string; receipt: PaymentReceipt };
    try {
      settled = await settle();
    } catch (error) {
      const reason = errorText(error);
      await markFailed(store, claimed.id, reason);
      await run.abandon(executionId, `Payment settlement failed: ${reason}`);
      throw await paymentRequired(resource, `settlement failed (${reason})`);
    }
    await markSettled(store, claimed.id, settled.transaction, settled.receipt);
    await run.release(executionId);
    return { executionId, replayed: false, receipt: settled.receipt };
  }

  async function chargeX402(resource: PaidResource, credential: unknown, run: RunGate): Promise<ChargeResult> {
    let payload: PaymentPayload;
    try {
      payload = typeof credential === 'string' ? decodePaymentSignatureHeader(credential) : (credential as PaymentPayload);
    } catch {
      throw await paymentRequired(resource, 'the PAYMENT-SIGNATURE header is not base64-encoded x402 JSON');
    }
    const routeRefusal = wrongRoute(resource, payload);
    if (routeRefusal) throw await paymentRequired(resource, routeRefusal);
    const authorization = isRecord(payload) && isRecord(payload.payload) && isRecord(payload.payload.authorization) ? payload.payload.authorization : undefined;
    if (!authorization || typeof authorization.from !== 'string' || typeof authorization.nonce !== 'string' || !isRecord(payload.accepted)) {
      throw await paymentRequired(resource, 'the x402 payment is not an EIP-3009 exact payment (payload.authorization with from and nonce)');
    }
    const token = await init();
    const key = authorizationKey({ chainId: settings.chainId, asset: token.address, payer: authorization.from, nonce: authorization.nonce });
    const sigHash = signatureHash(String(payload.payload.signature ?? ''));
    const seen = await replay(resource, key, sigHash);
    if (seen) return seen;

    const requirements = resourceServer.findMatchingRequirements(await requirementsFor(resource, token), payload);
    if (!requirements) throw await paymentRequired(resource, 'the payment does not match this offer (scheme, network, asset, amount or payTo differ)');
    const verified = await resourceServer.verifyPayment(payload, requirements).catch((error) => ({ isValid: false, invalidReason: errorText(error) }) as const);
    if (!verified.isValid) {
      const detail = [verified.invalidReason, 'invalidMessage' in verified ? verified.invalidMessage : undefined].filter(Boolean).join(': ');
      throw await paymentRequired(resource, `verification failed (${detail || 'invalid payment'})`);
    }
    return settleAndRun(
      resource,
      {
        key,
        signatureHash: sigHash,
        protocol: 'x402',
        slug: resource.slug,
        network: settings.network,
        asset: token.address,
        amount: requirements.amount,
        payer: getAddress(authorization.from),
        payTo: resource.payTo,
      },
      run,
      async () => {
        const settlement = await resourceServer.settlePayment(payload, requirements);
        if (!settlement.success) throw new Error([settlement.errorReason, settlement.errorMessage].filter(Boolean).join(': ') || 'settlement failed');
        return { transaction: settlement.transaction, receipt: { protocol: 'x402', settlement } };
      },
    );
  }

  async function chargeMpp(resource: PaidResource, credential: unknown, run: RunGate): Promise<ChargeResult> {
    let parsed: Credential.Credential;
    try {
      parsed = typeof credential === 'string' ? Credential.deserialize(credential) : (credential as Credential.Credential);
    } catch {
      throw await paymentRequired(resource, 'the Authorization: Payment credential is not valid base64url JSON');
    }
    const payload = isRecord(parsed) && isRecord(parsed.payload) ? parsed.payload : undefined;
    if (!payload || typeof payload.from !== 'string' || typeof payload.nonce !== 'string' || !isRecord(parsed.challenge)) {
      throw await paymentRequired(resource, 'the MPP credential carries no EIP-3009 authorization (payload.from and payload.nonce)');
    }
    const token = await init();
    const key = authorizationKey({ chainId: settings.chainId, asset: token.address, payer: payload.from, nonce: payload.nonce });
    const sigHash = signatureHash(String(payload.signature ?? ''));
    const seen = await replay(resource, key, sigHash);
    if (seen) return seen;

    const mpp = mppFor(token, resource.payTo);
    // Binds the credential to this route and price: a challenge minted for another slug, amount or recipient is refused.
    const expected = { request: { amount: resource.price }, scope: resource.slug };
    try {
      await mpp.validateCredential(parsed, expected);
    } catch (error) {
      throw await paymentRequired(resource, `verification failed (${errorText(error)})`);
    }
    return settleAndRun(
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
      },
      run,
      async () => {
        const receipt = await mpp.broadcastCredential(parsed, expected);
        return { transaction: receipt.reference, receipt: { protocol: 'mpp', receipt } };
      },
    );
  }

  return {
    settings,
    facilitatorAddress: facilitator.signerAddress,
    pricing: (price) => ({
      price: { mode: 'fixed', amount: price, currency: 'USD' },
      protocols: [
        { protocol: 'x402', version: 2, scheme: 'exact', network: settings.network, asset: settings.token ?? null },
        { protocol: 'mpp', method: 'evm', intent: 'charge', currency: 'USDC', chainId: settings.chainId },
      ],
    }),
    async charge(resource, credentials, run) {
      const hasX402 = credentials.x402 !== undefined && credentials.x402 !== null && credentials.x402 !== '';
      const hasMpp = credentials.mpp !== undefined && credentials.mpp !== null && credentials.mpp !== '';
      if (hasX402 && hasMpp) {
        throw new ServiceError(
          400,
          'conflicting_payment_credentials',
          'Send one payment credential, not two: either PAYMENT-SIGNATURE (x402) or Authorization: Payment (MPP). Nothing was run or charged.',
        );
      }
      if (hasX402) return chargeX402(resource, credentials.x402, run);
      if (hasMpp) return chargeMpp(resource, credentials.mpp, run);
      throw await paymentRequired(resource);
    },
    receiptHeaders(receipt): Record<string, string> {
      return receipt.protocol === 'x402'
        ? { 'PAYMENT-RESPONSE': encodePaymentResponseHeader(receipt.settlement) }
        : { 'Payment-Receipt': Receipt.serialize(receipt.receipt) };
    },
    receiptMeta(receipt) {
      return receipt.protocol === 'x402' ? { [MCP_X402_RESPONSE]: receipt.settlement } : { [MCP_MPP_RECEIPT]: receipt.receipt };
    },
  };
}
