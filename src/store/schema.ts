import type { Generated } from 'kysely';

/** Table types for Kysely. Timestamps are ISO-8601 text so both dialects read them alike. */

export interface OrganizationsTable {
  id: string;
  slug: string;
  name: string;
  created_at: string;
  /** Organization-configured daily native-value caps; null = the deployment default. */
  daily_cap_wei: string | null;
  daily_solana_cap_lamports: string | null;
}

export interface UsersTable {
  id: string;
  email: string | null;
  provider_id: string;
  created_at: string;
  /** The user's primary linked wallet (EIP-55), signs SIWE and step-up challenges. */
  wallet_address: string | null;
  email_verified_at: string | null;
  /** scrypt, see src/auth/passwords.ts. */
  password_hash: string | null;
  /** Sealed with the master key (aad: user id). */
  totp_secret_encrypted: string | null;
  totp_enabled_at: string | null;
  /** RFC 6238 time step of the last TOTP code spent (replay guard; migration 012). */
  totp_last_step: number | null;
}

export interface MembershipsTable {
  organization_id: string;
  user_id: string;
  role: 'owner' | 'admin' | 'member';
  created_at: string;
}

export interface ApiKeysTable {
  id: string;
  organization_id: string;
  user_id: string;
  name: string;
  /** First characters of the key, shown in listings; the key itself is never stored. */
  prefix: string;
  /** SHA-256 of the full key, hex. */
  key_hash: string;
  scope: string | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface WalletsTable {
  organization_id: string;
  evm_address: string;
  /** AES-256-GCM ciphertext of the EVM private key (see wallets/crypto.ts). */
  evm_key_encrypted: string;
  solana_address: string;
  solana_key_encrypted: string;
  created_at: string;
}

export interface AbiCacheTable {
  chain_id: number;
  address: string;
  abi: string;
  explorer_url: string | null;
  fetched_at: string;
}

/** Owned by rate-limiter-flexible's SQLite store (layout fixed by that library). */
export interface RateLimitsTable {
  key: string;
  points: number;
  expire: number | null;
}

/** Migration 034: one counted request of a sliding-window limit (src/guards/sliding-window.ts). */
export interface RateLimitHitsTable {
  id: string;
  key: string;
  hit_at: number;
  expire: number;
  refused: number;
}

export interface ProjectsTable {
  id: string;
  organization_id: string;
  name: string;
  description: string | null;
  color: string;
  created_at: string;
  updated_at: string;
}

export interface TagsTable {
  id: string;
  organization_id: string;
  user_id: string;
  name: string;
  color: string;
  created_at: string;
  updated_at: string;
}

export interface PublicTagsTable {
  id: string;
  name: string;
  slug: string;
  created_by_organization_id: string | null;
  created_at: string;
}

export interface WorkflowsTable {
  id: string;
  organization_id: string | null;
  user_id: string | null;
  name: string;
  description: string | null;
  visibility: 'private' | 'public';
  /** JSON text of the normalized node array. */
  nodes: string;
  /** JSON text of the edge array. */
  edges: string;
  project_id: string | null;
  tag_id: string | null;
  enabled: number;
  claim_token_hash: string | null;
  featured: number;
  featured_category: string | null;
  featured_protocol: string | null;
  featured_order: number | null;
  published_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface WorkflowPublicTagsTable {
  workflow_id: string;
  public_tag_id: string;
}

export interface WorkflowExecutionsTable {
  id: string;
  workflow_id: string;
  organization_id: string;
  user_id: string | null;
  status: string;
  input: string | null;
  output: string | null;
  error: string | null;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
  /** JSON of the graph as it was when the run started; edits never change a running execution. */
  graph: string | null;
  trigger_type: string | null;
  lease_owner: string | null;
  /** Epoch ms; a running execution whose lease lapsed is reaped to system_error. */
  lease_expires_at: number | null;
  heartbeat_at: string | null;
  cancel_requested: number | null;
  error_context: string | null;
  idempotency_key: string | null;
  request_hash: string | null;
  /** JSON array of TransactionHash entries, in submission order. */
  transaction_hashes: string | null;
  gas_used_wei: string | null;
  scheduled_for: string | null;
  current_node_id: string | null;
  /** Chain triggers: the block, log or transfer this run is for; unique per workflow. */
  trigger_occurrence: string | null;
  /** When retention removed the run's data (logs, input, output, graph copy); null while it is kept. */
  data_pruned_at: string | null;
}

export interface WorkflowSchedulesTable {
  workflow_id: string;
  organization_id: string;
  cron: string;
  timezone: string;
  next_run_at: number;
  last_run_at: number | null;
}

export interface ChainTriggerCursorsTable {
  workflow_id: string;
  organization_id: string;
  chain_id: number;
  /** Canonical JSON of the watched trigger (ChainTriggerSpec). */
  spec: string;
  /** Last processed block; null until the head could be read. */
  last_block: number | null;
  updated_at: string;
}

export interface WorkflowExecutionLogsTable {
  id: string;
  execution_id: string;
  node_id: string;
  node_name: string | null;
  node_type: string | null;
  status: string;
  input: string | null;
  output: string | null;
  error: string | null;
  started_at: string | null;
  completed_at: string | null;
  duration_ms: number | null;
  seq: number | null;
  iteration_index: number | null;
  for_each_node_id: string | null;
}

export interface UserApiKeysTable {
  id: string;
  user_id: string;
  organization_id: string;
  name: string;
  prefix: string;
  key_hash: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

/** Organization integrations; credential fields live only in `credentials_encrypted` (sealed JSON, aad `integration:<id>`). */
export interface IntegrationsTable {
  id: string;
  organization_id: string;
  name: string;
  type: string;
  is_managed: number;
  /** JSON text of the non-secret configuration fields. */
  config: string;
  credentials_encrypted: string;
  created_at: string;
  updated_at: string;
}

export interface DirectExecutionsTable {
  id: string;
  organization_id: string;
  api_key_id: string | null;
  type: string;
  chain_id: number;
  /** pending (reserved, not yet signed) | completed | failed | unconfirmed */
  status: string;
  from_address: string | null;
  to_address: string | null;
  value_wei: string;
  transaction_hash: string | null;
  /** Raw signed transaction, stored before broadcast so a retry re-sends the same bytes. */
  signed_transaction: string | null;
  receipts: string;
  result: string | null;
  error: string | null;
  gas_used_wei: string | null;
  created_at: string;
  completed_at: string | null;
}

export interface IdempotencyRecordsTable {
  organization_id: string;
  endpoint: string;
  key: string;
  request_hash: string;
  /** in_progress | settled | held */
  state: string;
  execution_id: string | null;
  response_status: number | null;
  response_body: string | null;
  created_at: string;
  expires_at: string;
}

export interface SpendReservationsTable {
  id: string;
  organization_id: string;
  asset: string;
  day: string;
  amount: string;
  source: string;
  execution_id: string;
  status: string;
  created_at: string;
  /** EVM chain the value moved on (per-chain caps); null for Solana and for rows older than migration 013. */
  chain_id: number | null;
  /** The transaction the value moves in, noted before it is broadcast (migration 039); null until signed. */
  transaction_hash: string | null;
}

/** Running sums of counted reservations (migration 020): per organization, asset and UTC day; `chain_id` 0 is organization-wide. */
export interface SpendTotalsTable {
  organization_id: string;
  asset: string;
  day: string;
  chain_id: number;
  /** Decimal string (wei or lamports). */
  used: string;
}

/** Run data written per organization and UTC day (migration 023), in JSON characters. */
export interface OrganizationRunDataTable {
  organization_id: string;
  day: string;
  /** A string on PostgreSQL (bigint). */
  chars: number | string;
  /** Triggered runs written skipped this day (src/engine/skipped-runs.ts). */
  skipped_runs: Generated<number>;
}

export interface WorkflowListingsTable {
  slug: string;
  workflow_id: string;
  organization_id: string;
  source: 'catalog' | 'published';
  title: string;
  description: string;
  workflow_type: 'read' | 'write';
  chain_id: number | null;
  price: string | null;
  input_schema: string;
  output_fields: string;
  result_source: string | null;
  protocols: string;
  listed: number;
  created_at: string;
  updated_at: string;
}

export interface PaymentsTable {
  id: string;
  authorization_key: string;
  signature_hash: string;
  protocol: 'x402' | 'mpp';
  listing_slug: string;
  execution_id: string | null;
  /**
   * `released`: verified, but the run could not start, so it was never settled; it may be presented again for the same slug only.
   * `settling`: sent, but its outcome was not known when the call stopped waiting; resolved from the chain (src/catalog/pending-payments.ts).
   */
  status: 'verified' | 'settling' | 'settled' | 'failed' | 'released';
  network: string;
  asset: string;
  amount: string;
  payer: string;
  pay_to: string;
  transaction_hash: string | null;
  receipt: string | null;
  error: string | null;
  /** The authorization's validBefore (unix seconds): unused by then, it can never be used (migration 037). */
  valid_before: string | null;
  created_at: string;
  updated_at: string;
}

export interface SessionsTable {
  id: string;
  /** SHA-256 of the cookie's token. */
  token_hash: string;
  user_id: string;
  /** The active organization; switching rewrites it. */
  organization_id: string;
  ip: string | null;
  user_agent: string | null;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
  revoked_at: string | null;
}

export interface SiweNoncesTable {
  nonce_hash: string;
  wallet_address: string;
  chain_id: number;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

export interface StepUpChallengesTable {
  id: string;
  challenge_hash: string;
  user_id: string;
  action: string;
  email_code_hash: string | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
  /** Who asked (migration 033): `session` for any of the user's sessions, else `<kind>:<id>` of the key or token; only it can answer. */
  credential_id: string | null;
}

export interface InvitationsTable {
  id: string;
  organization_id: string;
  token_hash: string;
  role: 'owner' | 'admin' | 'member';
  email: string | null;
  invited_by: string;
  created_at: string;
  expires_at: string;
  accepted_at: string | null;
  accepted_by: string | null;
  revoked_at: string | null;
}

export interface EmailTokensTable {
  token_hash: string;
  user_id: string;
  purpose: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
  /** Sign-up links only: the scrypt hash and name chosen in the sign-up that sent this link (migration 014). */
  pending_password_hash: string | null;
  pending_name: string | null;
  /** Address links only: the address a signed-in user asked to add. */
  pending_email: string | null;
}

/** `flowgate open` one-time sign-in links (migration 017). */
export interface SignInLinksTable {
  token_hash: string;
  user_id: string;
  organization_id: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** Nonces allocated per (chain, address) across instances sharing PostgreSQL (migration 018; src/chains/shared-nonces.ts). */
export interface ChainNoncesTable {
  chain_id: number;
  /** Lowercase. */
  address: string;
  nonce: number;
  state: 'allocated' | 'sent' | 'free';
  /** Epoch milliseconds the state was set. */
  at: number;
}

export interface AuditLogTable {
  id: string;
  organization_id: string | null;
  actor_user_id: string | null;
  actor_kind: string;
  actor_key_id: string | null;
  action: string;
  target: string | null;
  outcome: 'success' | 'failure';
  ip: string | null;
  /** JSON; never a secret. */
  details: string | null;
  created_at: string;
}

export interface OrganizationChainCapsTable {
  organization_id: string;
  chain_id: number;
  daily_cap_wei: string;
  updated_at: string;
  updated_by: string | null;
}

export interface OAuthClientsTable {
  client_id: string;
  secret_hash: string | null;
  /** RFC 7591 client metadata, JSON, no secret. */
  metadata: string;
  source: 'registered' | 'metadata_document';
  created_at: string;
  expires_at: string | null;
}

export interface OAuthGrantsTable {
  id: string;
  client_id: string;
  client_name: string | null;
  user_id: string;
  organization_id: string;
  /** One scope: mcp:read, mcp:write or mcp:admin. */
  scope: string;
  resource: string;
  redirect_uri: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  revoked_reason: string | null;
}

export interface OAuthRequestsTable {
  id_hash: string;
  session_id: string;
  client_id: string;
  /** JSON of the validated authorization parameters. */
  params: string;
  expires_at: string;
  used_at: string | null;
}

export interface OAuthCodesTable {
  code_hash: string;
  grant_id: string;
  code_challenge: string;
  expires_at: string;
  used_at: string | null;
  /** The authorization request's redirect_uri when it sent one (migration 035): /token must then repeat it. */
  redirect_uri: string | null;
}

export interface OAuthTokensTable {
  token_hash: string;
  grant_id: string;
  kind: 'access' | 'refresh';
  created_at: string;
  expires_at: string;
  used_at: string | null;
  revoked_at: string | null;
  /** An access token's own scope when narrower than its grant's (migration 035); null: the grant's. */
  scope: string | null;
}

export interface Database {
  organizations: OrganizationsTable;
  users: UsersTable;
  memberships: MembershipsTable;
  api_keys: ApiKeysTable;
  wallets: WalletsTable;
  abi_cache: AbiCacheTable;
  rate_limits: RateLimitsTable;
  rate_limit_hits: RateLimitHitsTable;
  projects: ProjectsTable;
  tags: TagsTable;
  public_tags: PublicTagsTable;
  workflows: WorkflowsTable;
  workflow_public_tags: WorkflowPublicTagsTable;
  workflow_executions: WorkflowExecutionsTable;
  workflow_execution_logs: WorkflowExecutionLogsTable;
  user_api_keys: UserApiKeysTable;
  workflow_schedules: WorkflowSchedulesTable;
  chain_trigger_cursors: ChainTriggerCursorsTable;
  integrations: IntegrationsTable;
  direct_executions: DirectExecutionsTable;
  idempotency_records: IdempotencyRecordsTable;
  spend_reservations: SpendReservationsTable;
  spend_totals: SpendTotalsTable;
  organization_run_data: OrganizationRunDataTable;
  workflow_listings: WorkflowListingsTable;
  payments: PaymentsTable;
  sessions: SessionsTable;
  siwe_nonces: SiweNoncesTable;
  step_up_challenges: StepUpChallengesTable;
  invitations: InvitationsTable;
  email_tokens: EmailTokensTable;
  audit_log: AuditLogTable;
  organization_chain_caps: OrganizationChainCapsTable;
  sign_in_links: SignInLinksTable;
  chain_nonces: ChainNoncesTable;
  oauth_clients: OAuthClientsTable;
  oauth_grants: OAuthGrantsTable;
  oauth_requests: OAuthRequestsTable;
  oauth_codes: OAuthCodesTable;
  oauth_tokens: OAuthTokensTable;
  run_rollups: RunRollupsTable;
  network_rollups: NetworkRollupsTable;
  store_settings: StoreSettingsTable;
  listings_version: VersionCounterTable;
  public_tags_version: VersionCounterTable;
  public_workflows_version: VersionCounterTable;
}

/** One row per fact about the database itself (migration 019): `master_key_check`. */
export interface StoreSettingsTable {
  name: string;
  value: string;
}

/**
 * One row (id 1) whose version every change to what it follows moves, by trigger; absent means 0. `listings_version`:
 * workflow_listings (migration 029); `public_tags_version`: public tags, their links and workflows' visibility (migration 030);
 * `public_workflows_version`: public workflows, public tags and their links (migration 031).
 */
export interface VersionCounterTable {
  id: number;
  version: number;
}

/** Hourly analytics counters, kept by triggers (migration 016); gas as digits above and below 1e9. */
export interface RunRollupsTable {
  organization_id: string;
  /** Hours since the Unix epoch (UTC) of the runs' creation. */
  hour: number;
  source: 'workflow' | 'direct';
  runs: number;
  ok: number;
  failed: number;
  duration_sum: number;
  duration_count: number;
  gas_high: number;
  gas_low: number;
}

export interface NetworkRollupsTable {
  organization_id: string;
  hour: number;
  chain_id: number;
  runs: number;
  gas_high: number;
  gas_low: number;
}

export type { Generated };
