import type { Config } from './config.ts';
import type { Store } from './store/db.ts';
import type { ChainCatalog } from './chains/catalog.ts';
import type { AbiLookup } from './chains/abi-lookup.ts';
import type { KeyService } from './auth/keys.ts';
import type { OrganizationService } from './org/organizations.ts';
import type { RateLimiter } from './guards/rate-limit.ts';

/** The domain services a tool handler may use. Built once per gateway in src/gateway.ts. */
export interface Services {
  config: Config;
  store: Store;
  chains: ChainCatalog;
  abiLookup: AbiLookup;
  keys: KeyService;
  organizations: OrganizationService;
  rateLimiter: RateLimiter;
}
