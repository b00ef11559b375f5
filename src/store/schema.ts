import type { Generated } from 'kysely';

/** Table types for Kysely. Timestamps are ISO-8601 text so both dialects read them alike. */

export interface OrganizationsTable {
  id: string;
  slug: string;
  name: string;
  created_at: string;
}

export interface UsersTable {
  id: string;
  email: string | null;
  provider_id: string;
  created_at: string;
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

export interface Database {
  organizations: OrganizationsTable;
  users: UsersTable;
  memberships: MembershipsTable;
  api_keys: ApiKeysTable;
  wallets: WalletsTable;
  abi_cache: AbiCacheTable;
  rate_limits: RateLimitsTable;
}

export type { Generated };
