/**
 * Every error code the gateway answers with, declared once: its usual HTTP
 * status and what it means. `ServiceError` takes only these codes (the
 * compiler refuses any other), and `/docs/errors` and `/openapi.json`
 * (`x-error-model.codes`) are generated from this list.
 */
export const ERROR_CODES = {
  invalid_input: { status: 400, meaning: 'a field failed validation; `issues` lists each path, what was expected and, where it helps, a suggestion' },
  invalid_json: { status: 400, meaning: 'the body is not valid JSON, or nests deeper than 64 levels' },
  invalid_json_field: { status: 400, meaning: 'a field that must hold a JSON document (`abi`, `tokenConfig`, ...) does not parse' },
  invalid_workflow: { status: 400, meaning: 'a workflow save failed validation; `invalidFields` names each node, field and a fix' },
  invalid_config: { status: 400, meaning: 'a node or integration config is not usable as sent' },
  invalid_condition: { status: 400, meaning: 'a Condition expression cannot be evaluated' },
  invalid_cron: { status: 400, meaning: 'a cron expression does not parse' },
  invalid_timezone: { status: 400, meaning: 'not an IANA time zone' },
  invalid_idempotency_key: { status: 400, meaning: 'an idempotency key that is empty after trimming or longer than 255 characters' },
  invalid_address: { status: 400, meaning: 'a malformed address, or a mixed-case address with a wrong EIP-55 checksum' },
  invalid_amount: { status: 400, meaning: 'an amount that is not an exact decimal (whitespace, sign, exponent, too many decimals, zero)' },
  invalid_value: { status: 400, meaning: '`value` sent to a function that is not payable, or malformed' },
  invalid_abi: { status: 400, meaning: '`abi` is not a JSON array of ABI entries' },
  invalid_error_abis: { status: 400, meaning: '`errorAbis` over the limits (4 documents, 16 KB each) or declaring no error' },
  invalid_calldata: { status: 400, meaning: '`data` is not hex calldata for a function of the ABI' },
  invalid_function_args: { status: 400, meaning: '`functionArgs` is not a JSON array' },
  invalid_gas_limit_multiplier: { status: 400, meaning: '`gasLimitMultiplier` is not a decimal between 1 and 10' },
  invalid_token_config: { status: 400, meaning: '`tokenConfig` is not a JSON object with valid `decimals` and `symbol`' },
  invalid_input_schema: { status: 400, meaning: "a published listing's input schema is not a usable JSON Schema" },
  function_not_found: { status: 400, meaning: 'the ABI has no function of that name and arity' },
  function_name_conflict: { status: 400, meaning: '`functionName` and `abiFunction` (or the calldata) disagree' },
  function_args_mismatch: { status: 400, meaning: "`functionArgs` do not fit the function's parameters" },
  token_decimals_mismatch: { status: 400, meaning: '`tokenConfig.decimals` disagrees with the token on chain' },
  token_decimals_unknown: { status: 400, meaning: "the token's decimals could not be read; pass `tokenConfig.decimals`" },
  unsupported_chain: { status: 400, meaning: 'a chain id or name the gateway does not serve for this operation' },
  chain_disabled: { status: 400, meaning: 'a known chain that is not enabled on this gateway' },
  unsupported_param: { status: 400, meaning: 'a parameter this operation refuses (`simulate: true` on a protocol action or `/api/execute/node`)' },
  unsupported_version: { status: 400, meaning: 'a `Service-Version` the gateway does not serve' },
  unknown_action: { status: 400, meaning: 'an `actionType` that is not in the action registry' },
  action_not_available: { status: 400, meaning: 'an action that exists but cannot run on this gateway yet' },
  action_not_runnable: { status: 400, meaning: 'an action that cannot be run through this route' },
  abi_unavailable: { status: 400, meaning: 'no ABI was given and none could be fetched for this chain' },
  simulation_failed: { status: 400, meaning: "a transfer's simulation would revert; nothing was reserved or signed" },
  read_failed: { status: 400, meaning: 'a contract read reverted or returned nothing' },
  read_reverted: { status: 400, meaning: 'a view or pure call reverted' },
  transaction_not_found: { status: 400, meaning: 'the chain does not know this transaction hash' },
  not_a_webhook_workflow: { status: 400, meaning: "the workflow's trigger is not Webhook" },
  integration_test_failed: { status: 400, meaning: 'an integration test reached the provider and failed (no secrets in the message)' },
  conflicting_payment_credentials: { status: 400, meaning: 'both an x402 and an MPP payment were sent on one request' },
  cap_above_maximum: { status: 400, meaning: "a spend cap above the deployment's maximum (`maximum`, set by the operator with FLOWGATE_MAX_DAILY_*)" },
  invitation_invalid: { status: 400, meaning: 'an invitation token that is unknown, expired, already used or revoked (the message says which)' },
  MISSING_RESPONSE: {
    status: 400,
    meaning: '`Missing CAPTCHA response`: e-mail sign-up without a solved CAPTCHA (header `x-captcha-response` or `captchaToken`)',
  },
  captcha_failed: { status: 400, meaning: 'the CAPTCHA provider did not accept the response (`errorCodes`); solve the challenge again' },
  email_token_invalid: { status: 400, meaning: 'an e-mail verification link that is unknown, expired (24 h) or already used' },
  sign_in_link_invalid: {
    status: 401,
    meaning: 'a `flowgate open` sign-in link that is unknown, expired (5 minutes), already used, or whose user left the organization',
  },
  request_aborted: { status: 400, meaning: 'the request body was not fully received' },
  bad_request: { status: 400, meaning: 'a request the HTTP layer refused before any operation saw it' },
  unauthorized: { status: 401, meaning: 'missing, malformed, unknown or revoked credential; carries `WWW-Authenticate`' },
  invalid_credentials: { status: 401, meaning: 'e-mail sign-in refused: unknown address, wrong password or unverified address (one answer for all three)' },
  session_required: { status: 401, meaning: 'the route needs a signed-in browser session' },
  siwe_invalid: {
    status: 401,
    meaning: 'a wallet sign-in was refused; the message says which check failed (domain, URI, nonce, expiry, chain, signer)',
  },
  signature_required: {
    status: 401,
    meaning: 'step-up: sign `challenge` with your primary wallet and repeat the request with `signature` (`required` lists factors)',
  },
  factors_required: { status: 401, meaning: 'step-up: the wallet signature is fine but `required` factors (`code`, `emailOtp`) are missing or wrong' },
  wallet_signature_invalid: {
    status: 401,
    meaning: 'step-up: the signature is not from your primary wallet or its challenge is used or expired; no new challenge',
  },
  payment_required: {
    status: 402,
    meaning: 'a paid workflow call without a valid payment; the x402 and MPP challenges say how to pay (`reason` when a payment was refused)',
  },
  insufficient_scope: { status: 403, meaning: "the key's scope is too small; `required_scope`, `granted_scope`" },
  daily_spending_cap_exceeded: { status: 403, meaning: "the native value would pass the organization's daily cap" },
  not_original_creator: { status: 403, meaning: 'only the creator of an anonymous workflow may claim it' },
  listing_managed_by_catalog: { status: 403, meaning: 'a catalog listing cannot be published over or unlisted' },
  not_admin_or_owner: { status: 403, meaning: 'the operation needs the organization role admin or owner (checked before any step-up challenge)' },
  step_up_wallet_required: {
    status: 403,
    meaning: 'a step-up gated operation by a user with no linked wallet (the local owner): sign in with a wallet, or use the CLI on the host',
  },
  MISSING_OR_NULL_ORIGIN: { status: 403, meaning: 'a state-changing request to `/api/auth/*` without an `Origin` header (or `Origin: null`)' },
  invalid_origin: {
    status: 403,
    meaning: '`Invalid origin`: a state-changing cookie request whose `Origin` (or `Referer`) is not the gateway or an allowed origin',
  },
  invitation_wrong_recipient: { status: 403, meaning: 'an invitation bound to an e-mail address, redeemed by a user without that verified address' },
  email_sign_up_disabled: { status: 403, meaning: 'e-mail sign-up is off on this deployment (no mailer configured)' },
  origin_not_allowed: { status: 403, meaning: 'a browser `Origin` the MCP endpoint does not trust' },
  not_found: { status: 404, meaning: "no such resource in this organization (another organization's id answers the same)" },
  chain_not_found: { status: 404, meaning: 'no chain with that id or name' },
  not_configured: { status: 404, meaning: 'an optional document this deployment does not publish' },
  abi_not_verified: { status: 404, meaning: 'the explorer has no verified ABI for this contract' },
  listing_not_found: { status: 404, meaning: 'no listed workflow with that slug' },
  listing_unavailable: { status: 404, meaning: 'a listed workflow whose steps cannot run on this gateway' },
  unknown_tool: { status: 404, meaning: 'an MCP tool name that does not exist (with a did-you-mean)' },
  method_not_allowed: { status: 405, meaning: 'wrong method; `Allow` lists the right ones' },
  request_timeout: { status: 408, meaning: 'the request was not fully received within `FLOWGATE_REQUEST_TIMEOUT_MS`' },
  conflict: { status: 409, meaning: 'the change conflicts with existing state (a workflow with history deleted without `force=true`, a duplicate name)' },
  last_owner: { status: 409, meaning: 'the change would leave the organization without an owner; promote another member first' },
  already_member: { status: 409, meaning: 'the signed-in user already belongs to the organization of this invitation (left unused)' },
  already_claimed: { status: 409, meaning: 'the workflow was already claimed' },
  idempotency_conflict: { status: 409, meaning: 'the same key was used with a different body; `retryable: false`, `originalExecutionId`' },
  idempotency_in_progress: { status: 409, meaning: 'a request with this key is still running; `retryable: true`' },
  payment_in_progress: { status: 409, meaning: 'this payment is being processed by another request; retry for its result' },
  slug_taken: { status: 409, meaning: 'the listing slug belongs to another workflow (with a suggestion)' },
  no_wallet: { status: 409, meaning: 'the organization has no wallet for this operation' },
  wallet_missing: { status: 409, meaning: 'the organization wallet is missing' },
  gas_top_up_unavailable: { status: 409, meaning: 'gas top-ups are not available here; fund the named wallet by hand' },
  quota_exceeded: { status: 409, meaning: 'the organization holds as many of this resource as the deployment allows (`resource`, `limit`); delete some first' },
  invalid_webhook_schema: { status: 409, meaning: "the workflow's stored webhook schema cannot be used" },
  listing_schema_unusable: {
    status: 409,
    meaning: "a listed workflow's stored input schema can no longer be used (published before a rule that refuses it); its publisher must publish it again",
  },
  workflow_disabled: { status: 410, meaning: 'the workflow is disabled' },
  payload_too_large: { status: 413, meaning: 'the body is over the size limit' },
  unsupported_media_type: { status: 415, meaning: 'a body that is not UTF-8 JSON' },
  rate_limited: { status: 429, meaning: 'a rate limit was reached; wait `Retry-After` seconds (`limit`, `retryAfterSeconds`)' },
  internal_error: { status: 500, meaning: 'a gateway bug; logged, no details leak' },
  listing_misconfigured: { status: 500, meaning: 'a listed workflow is misconfigured on this gateway; logged' },
  explorer_unavailable: { status: 502, meaning: 'the block explorer did not answer usably' },
  notification_failed: {
    status: 502,
    meaning: 'a chat or e-mail provider did not take the message (its own words, no credential); `provider`, `attempts`, `lastStatus`, `durationMs`',
  },
  chain_unavailable: { status: 502, meaning: 'the chain answered with an error; nothing was sent' },
  rpc_unavailable: { status: 503, meaning: "the chain's RPC node could not be reached; nothing was signed or sent (never reported as a revert)" },
  payments_unavailable: { status: 503, meaning: 'paid calls are not configured, or the facilitator or payment chain is unreachable; nothing was charged' },
  run_not_started: { status: 503, meaning: 'the run could not be started; nothing was charged' },
  captcha_unavailable: { status: 503, meaning: 'the CAPTCHA provider could not be reached; nothing was created (fails closed)' },
  email_unavailable: { status: 503, meaning: "the deployment's mail provider did not take the message; retry later" },
  unavailable: { status: 503, meaning: 'an upstream (a database) did not answer' },
} as const satisfies Record<string, { status: number; meaning: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * The one error type domain code throws. It carries everything the edges need
 * to render it (HTTP status, machine code, human message, extra fields) and
 * nothing about HTTP or MCP themselves.
 */
export class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
    /** Response headers the error needs (Retry-After, WWW-Authenticate, ...). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ServiceError';
  }

  /** The JSON body every edge renders: `{error, code, ...details}`. */
  toBody(): Record<string, unknown> {
    return { error: this.message, code: this.code, ...this.details };
  }
}

export const badRequest = (code: ErrorCode, message: string, details?: Record<string, unknown>) => new ServiceError(400, code, message, details);

export const notFound = (message: string, details?: Record<string, unknown>) => new ServiceError(404, 'not_found', message, details);

export const isServiceError = (value: unknown): value is ServiceError => value instanceof ServiceError;
