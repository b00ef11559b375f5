import type { Migration, MigrationProvider } from 'kysely';
import * as core from './001_core.ts';
import * as abiCacheAndRateLimits from './002_abi_cache_and_rate_limits.ts';

/** Ordered, append-only. Never edit a migration that has shipped; add a new one. */
export const migrations: Record<string, Migration> = {
  '001_core': core,
  '002_abi_cache_and_rate_limits': abiCacheAndRateLimits,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
