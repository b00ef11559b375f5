import { EgressSlots } from './net/egress-slots.ts';
import { createSessionService } from './auth/sessions.ts';
import type { AddressInfo } from 'node:net';
import type { AnyTool } from '../tools/define.ts';
import { registry } from '../tools/index.ts';
import { createKeyService } from './auth/keys.ts';
import { createAbiLookup } from './chains/abi-lookup.ts';
import { createChainCatalog } from './chains/catalog.ts';
import { createChainClients } from './chains/clients.ts';
import { createNonceManager } from './chains/nonces.ts';
import { createSharedNonceManager } from './chains/shared-nonces.ts';
import { fundIfEmpty, type Devnet } from './chains/devnet/devnet.ts';
import { openDevnet, type RunningDevnet } from './chains/devnet/embedded.ts';
import { createStablecoinRegistry } from './chains/stablecoins.ts';
import { TEST_USDC } from './chains/devnet/test-usdc.ts';
import type { Config } from './config.ts';
import { createRateLimiter } from './guards/rate-limit.ts';
import { createHttpApp } from './http/app.ts';
import { createNodeServer } from './http/node-server.ts';
import { createOrganizationService, DEFAULT_ORGANIZATION_SLUG } from './org/organizations.ts';
import type { Services } from './services.ts';
import { advertiseBaseUrl, withdrawBaseUrl } from './advertised-base-url.ts';
import { createEngine } from './engine/engine.ts';
import { migrate, openStore } from './store/db.ts';
import { followDatabaseClock } from './store/postgres.ts';
import { checkpointInBackground } from './store/checkpointer.ts';
import { resolvePendingPayments } from './catalog/pending-payments.ts';
import { finishInterruptedExecutions } from './execute/interrupted-sweep.ts';
import { settleStaleReservations } from './onchain/stale-reservations.ts';
import { sweepExpiredRows } from './store/expired-rows.ts';
import { createPgBus } from './store/pg-bus.ts';
import { holdSessionLock, tryHoldSessionLock } from './store/postgres.ts';
import { DEVNET_CHAIN_ID } from './chains/devnet/test-usdc.ts';
import { createSecretBox, loadMasterKey } from './wallets/crypto.ts';
import { checkMasterKey } from './wallets/master-key-check.ts';
import { createOnDemandPaymentsService } from './payments/on-demand.ts';
import { resolvePaymentSettings } from './payments/settings.ts';
import { loadCatalog } from './catalog/load.ts';
import { syncCatalog } from './catalog/sync.ts';

// `flowgate mcp` reads it from here; the leaf module is what light callers import.
export { readAdvertisedBaseUrl } from './advertised-base-url.ts';

/** Wires config → store → domain services. Used by `flowgate serve`, the CLI and tests. */

export interface Runtime {
  services: Services;
  close(): Promise<void>;
}

/** `devnet`: the running devnet, when the caller started one (createGateway does; CLI commands don't). */
export async function openRuntime(config: Config, options: { devnet?: Devnet | null } = {}): Promise<Runtime> {
  return assembleRuntime(config, await openCheckedStore(config), options.devnet ?? null);
}

/** The store, migrated, and the master key it was sealed with, checked against it. */
async function openCheckedStore(config: Config) {
  const opened = openStore(config);
  const { store } = opened;
  let stopClock: (() => void) | undefined;
  try {
    // Instances sharing a PostgreSQL database compare each other's times on its server's clock (src/store/clock.ts).
    if (opened.kind === 'postgres') stopClock = await followDatabaseClock(opened.pool);
    await migrate(store);
    const masterKey = loadMasterKey(config.dataDir, config.masterKey);
    const box = createSecretBox(masterKey);
    await checkMasterKey(store, masterKey, box, config.dataDir);
    return { opened, masterKey, box, stopClock };
  } catch (error) {
    stopClock?.();
    await store.destroy();
    throw error;
  }
}

function assembleRuntime(config: Config, { opened, masterKey, box, stopClock }: Awaited<ReturnType<typeof openCheckedStore>>, devnet: Devnet | null): Runtime {
  const { store } = opened;
  const chains = createChainCatalog(config);
  const stablecoins = createStablecoinRegistry();
  if (devnet) stablecoins.register(devnet.chainId, { address: devnet.usdcAddress, symbol: TEST_USDC.symbol, decimals: TEST_USDC.decimals });
  const paymentSettings = resolvePaymentSettings(config, chains, masterKey, devnet);
  // Several instances may share a PostgreSQL database and so the wallets: nonces are then allocated in it.
  const nonces = opened.kind === 'postgres' ? createSharedNonceManager(store) : createNonceManager();
  const rateLimiter = createRateLimiter(config, opened);
  const base = {
    config,
    store,
    chains,
    abiLookup: createAbiLookup({ store, chains, config, rateLimiter }),
    keys: createKeyService(store),
    sessions: createSessionService(store),
    organizations: createOrganizationService(store, box),
    rateLimiter,
    secrets: box,
    stablecoins,
    devnet,
    chainClients: createChainClients(chains),
    nonces,
    payments: createOnDemandPaymentsService({ store, settings: paymentSettings, rpcUrl: chains.rpcUrl(paymentSettings.chainId), nonces }),
    egressSlots: new EgressSlots(config.httpConcurrency.perOrganization, config.httpConcurrency.total),
  };
  createEngine(base, { ...engineOptionsFrom(config), bus: opened.kind === 'postgres' ? createPgBus(config.databaseUrl!, opened.pool) : undefined });
  const services = base as Services;
  return {
    services,
    close: () => {
      nonces.close?.();
      stopClock?.();
      return store.destroy();
    },
  };
}

function engineOptionsFrom(config: Config) {
  return {
    concurrency: config.engine.concurrency,
    perOrgConcurrency: config.engine.concurrencyPerOrg,
    leaseMs: config.engine.leaseMs,
    schedulerTickMs: config.engine.schedulerTickMs,
    chainTriggerPollMs: config.engine.chainTriggerPollMs,
  };
}

export interface FirstStart {
  organizationSlug: string;
  /** Shown once: the default organization had no key yet. */
  ownerKey: string;
}

/** Creates the default organization (owner, wallet) and, when it has no key yet, its first owner key. */
export async function bootstrapDefaultOrganization(services: Services): Promise<FirstStart | undefined> {
  const { organization, owner } = await services.organizations.ensure(DEFAULT_ORGANIZATION_SLUG);
  if ((await services.keys.countForOrganization(organization.id)) > 0) return undefined;
  const { key } = await services.keys.create({ organizationId: organization.id, userId: owner.id, name: 'Owner key (first start)', scope: null });
  return { organizationSlug: organization.slug, ownerKey: key };
}

export interface Gateway extends Runtime {
  firstStart: FirstStart | undefined;
  /** Listens on config.port (0 = ephemeral) and resolves with the bound URL. */
  listen(): Promise<string>;
}

export interface ServingRuntime extends Runtime {
  firstStart: FirstStart | undefined;
}

/**
 * The world `flowgate serve` runs in, for every process that serves the
 * registry on a data directory (the HTTP gateway and embedded `flowgate mcp`):
 * the devnet (shared with a live gateway on this data directory, else its
 * own), the default organization, funding, the catalog and payment settings.
 * Two entry points on one data directory therefore see the same chains,
 * prices and URLs.
 */
export interface ServingOptions {
  /** False: the first owner key is not minted (embedded stdio has no terminal to print it to). */
  mintOwnerKey?: boolean;
  /**
   * The devnet, already being opened by the caller (`flowgate serve` starts it before this module loads:
   * see src/cli.ts); it is then this runtime's to stop. Opened here when absent.
   */
  devnet?: Promise<RunningDevnet | null>;
}

export async function openServingRuntime(config: Config, options: ServingOptions = {}): Promise<ServingRuntime> {
  // anvil boots while the store opens and migrates (about 0.2 s of a cold start was waiting for it). The runtime is
  // assembled after both: the devnet sets config.rpcUrls[31337] when it spawns anvil.
  const [devnetOutcome, storeOutcome] = await Promise.allSettled([
    options.devnet ?? openDevnet(config, { claimSpawn: config.databaseUrl ? () => claimEmbeddedDevnet(config.databaseUrl!) : undefined }),
    openCheckedStore(config),
  ]);
  if (devnetOutcome.status === 'rejected' || storeOutcome.status === 'rejected') {
    if (devnetOutcome.status === 'fulfilled') await devnetOutcome.value?.stop();
    if (storeOutcome.status === 'fulfilled') await storeOutcome.value.opened.store.destroy();
    throw devnetOutcome.status === 'rejected' ? devnetOutcome.reason : (storeOutcome as PromiseRejectedResult).reason;
  }
  const devnet = devnetOutcome.value;
  let runtime: Runtime;
  let firstStart: FirstStart | undefined;
  try {
    runtime = assembleRuntime(config, storeOutcome.value, devnet?.devnet ?? null);
    // Instances starting together on one PostgreSQL database seed it in turn: each step reads then writes (the default
    // organization, its first key, the catalog's workflows), and two at once made the second exit on a unique key.
    const release = config.databaseUrl ? await holdSessionLock(config.databaseUrl, SEEDING_LOCK) : undefined;
    try {
      // Only a process that can show the first owner key mints it (embedded stdio has no terminal to print to).
      if (options.mintOwnerKey ?? true) firstStart = await bootstrapDefaultOrganization(runtime.services);
      else await runtime.services.organizations.ensure(DEFAULT_ORGANIZATION_SLUG);
      if (devnet) await fundDefaultWallet(runtime.services, devnet.devnet);
      await syncCatalog(runtime.services, loadCatalog());
      if (devnet) await fundFacilitator(runtime.services, devnet.devnet);
    } finally {
      await release?.();
    }
  } catch (error) {
    await devnet?.stop();
    throw error;
  }
  // A long-lived process: its SQLite checkpoints move off the event loop (src/store/checkpointer.ts).
  const { opened } = storeOutcome.value;
  const checkpointer = opened.kind === 'sqlite' ? checkpointInBackground(opened.sqlite) : undefined;
  const expiredRows = sweepExpiredRows(opened.store, {
    auditLogRetentionDays: config.auditLogRetentionDays,
    anonymousWorkflowRetentionDays: config.anonymousWorkflowRetentionDays,
  });
  // Paid calls left unresolved (an unmined settlement, a process stopped mid-settlement) are finished from the chain.
  const pendingPayments = resolvePendingPayments(runtime.services);
  // Direct executions whose request stopped before finishing them (a process killed mid-send) are finished from the chain.
  const interrupted = finishInterruptedExecutions(runtime.services);
  // Spend reservations their sender never settled (direct or workflow) are settled from the chain.
  const heldReservations = settleStaleReservations(runtime.services);
  return {
    ...runtime,
    firstStart,
    async close() {
      await pendingPayments.close();
      await interrupted.close();
      await heldReservations.close();
      await expiredRows.close();
      await checkpointer?.close();
      await runtime.close();
      await devnet?.stop();
    },
  };
}

/** Held by the one instance on a PostgreSQL database that runs an embedded devnet. */
const EMBEDDED_DEVNET_LOCK = 0x466c6465; // "Flde"
/** Held while an instance seeds the database at start (default organization, first key, catalog). */
const SEEDING_LOCK = 0x466c7364; // "Flsd"

/**
 * Instances sharing a database share its wallets, nonces and runs: they must
 * share one chain too. The first to start an embedded devnet holds a session
 * lock; another is refused rather than sending from the same wallets to a
 * chain of its own.
 */
async function claimEmbeddedDevnet(databaseUrl: string): Promise<() => Promise<void>> {
  const release = await tryHoldSessionLock(databaseUrl, EMBEDDED_DEVNET_LOCK);
  if (release) return release;
  throw new Error(
    `Another gateway on this PostgreSQL database already runs its own embedded devnet, and instances sharing a database must share one chain. ` +
      `Point this instance at that chain with FLOWGATE_RPC_URL_${DEVNET_CHAIN_ID}=<its RPC URL> (give every instance the same value), ` +
      `or set FLOWGATE_DEVNET=off; for production, set FLOWGATE_DEVNET=off and FLOWGATE_RPC_URL_<chainId> for each chain on every instance.`,
  );
}

export async function createGateway(config: Config, options: { tools?: readonly AnyTool[]; devnet?: ServingOptions['devnet'] } = {}): Promise<Gateway> {
  const runtime = await openServingRuntime(config, { devnet: options.devnet });
  const { firstStart } = runtime;
  const app = createHttpApp(runtime.services, options.tools ?? registry);
  const { server, drain } = createNodeServer(app, config.requestTimeoutMs);
  await runtime.services.engine.start();

  return {
    ...runtime,
    firstStart,
    listen: () =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(config.port, config.host, () => {
          const { port } = server.address() as AddressInfo;
          const host = config.host.includes(':') ? `[${config.host}]` : config.host;
          advertiseBaseUrl(config.dataDir, config.baseUrl);
          resolve(`http://${host}:${port}`);
        });
      }),
    async close() {
      // Requests first (a /wait in flight needs the engine to finish its run), then runs, then the store.
      await drain(config.shutdownGraceMs);
      await runtime.services.engine.stop();
      withdrawBaseUrl(config.dataDir, config.baseUrl);
      await runtime.close();
    },
  };
}

async function fundDefaultWallet(services: Services, devnet: Devnet) {
  const { organization } = await services.organizations.ensure(DEFAULT_ORGANIZATION_SLUG);
  const wallet = await services.organizations.wallet(organization.id);
  if (wallet) await fundIfEmpty(devnet, wallet.walletAddress);
}

/** The in-process facilitator pays the gas of settling payments on the devnet. */
async function fundFacilitator(services: Services, devnet: Devnet) {
  const address = services.payments.facilitatorAddress;
  if (!address || services.payments.settings.chainId !== devnet.chainId) return;
  if ((await devnet.balances(address)).eth === '0') await devnet.fund(address, { eth: '10' });
}
