import type { Config } from './config.ts';
import type { Store } from './store/db.ts';
import type { ChainCatalog } from './chains/catalog.ts';
import type { AbiLookup } from './chains/abi-lookup.ts';
import type { KeyService } from './auth/keys.ts';
import type { SessionService } from './auth/sessions.ts';
import type { OrganizationService } from './org/organizations.ts';
import type { RateLimiter } from './guards/rate-limit.ts';
import type { Engine } from './engine/engine.ts';
import type { SecretBox } from './wallets/crypto.ts';
import type { StablecoinRegistry } from './chains/stablecoins.ts';
import type { Devnet } from './chains/devnet/devnet.ts';
import type { ChainClients } from './chains/clients.ts';
import type { NonceManager } from './chains/nonces.ts';
import type { PaymentsService } from './payments/service.ts';
import type { EgressSlots } from './net/egress-slots.ts';

/** The domain services a tool handler may use. Built once per gateway in src/gateway.ts. */
export interface Services {
  config: Config;
  store: Store;
  chains: ChainCatalog;
  abiLookup: AbiLookup;
  keys: KeyService;
  /** Browser sessions (the session cookie). */
  sessions: SessionService;
  organizations: OrganizationService;
  rateLimiter: RateLimiter;
  /** AES-256-GCM under the master key, for credentials at rest (bind ciphertexts to their owner with `aad`). */
  secrets: SecretBox;
  /** Worker, scheduler and run events; started only by a serving gateway (not by CLI commands). */
  engine: Engine;
  /** Recognised stablecoins per chain (the per-transaction stablecoin limit); includes the devnet USDC when there is a devnet. */
  stablecoins: StablecoinRegistry;
  /** The devnet on chain 31337 when a serving gateway runs or uses one; null otherwise (and in CLI runtimes). */
  devnet: Devnet | null;
  /** viem public clients per catalog chain (RPC URLs stay inside). */
  chainClients: ChainClients;
  /** Nonces per (chain, sender) for this process's signers. */
  nonces: NonceManager;
  /** Paid workflow calls: dual 402, verification, settlement (src/payments). */
  payments: PaymentsService;
  /** Caps on outbound requests open at once on tenants' behalf, per organization and in this process. */
  egressSlots: EgressSlots;
}
