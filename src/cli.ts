import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { loadServeConfig } from './cli/serve-config.ts';
import { KEY_RECHECK_MS } from './auth/keys.ts';
import { GATEWAY_VERSION } from './version.ts';
import { mcpClientConfigs } from './mcp/client-config.ts';
import type { Services } from './services.ts';
import { dataDirPrefix, UsageError } from './cli/usage.ts';

const HELP = `flowgate ${GATEWAY_VERSION} — MCP-first agent gateway for onchain workflow automation

Usage:
  flowgate serve                      Run the gateway (what \`npm start\` runs)
  flowgate keys create --name NAME [--scope mcp:read|mcp:write|mcp:admin] [--org SLUG]
                                      Create an organization API key in the data directory;
                                      the key is the last line of output. --org names another
                                      organization, created (with owner and wallet) if missing.
  flowgate keys list [--org SLUG] [--json]
                                      Organization API keys (id, prefix, name, scope, dates,
                                      revoked ones too), read from the data directory.
  flowgate keys revoke KEY_ID         Revoke a key in the data directory (audited as the CLI); a
                                      running gateway refuses it within ${KEY_RECHECK_MS / 1000} s.
  flowgate open [--org SLUG]          Print a one-time link that opens the dashboard (/app) signed in
                                      as the organization's owner; single use, valid 5 minutes.
  flowgate oauth list [--org SLUG] [--json]
                                      Connected OAuth clients (grants: client, scope, resource, dates).
  flowgate oauth revoke GRANT_ID      Revoke a connected client and all its tokens at once (audited).
  flowgate db copy --to postgres://USER:PASSWORD@HOST:5432/DATABASE [--data-dir DIR]
                                      Copy the SQLite data directory (default FLOWGATE_DATA_DIR) into an
                                      empty PostgreSQL database in one transaction, verify the row counts
                                      and print them; a non-empty target is refused. Stop the gateway first.
  flowgate devnet fund ADDRESS [--eth N] [--usdc N]
                                      Top up ADDRESS on the devnet (chain 31337) with ETH and test
                                      USDC (default 100 ETH and 10000 USDC when neither is given).
                                      Uses the devnet of the gateway running on this data directory,
                                      or FLOWGATE_RPC_URL_31337.
  flowgate mcp [--url URL]            MCP over stdio for desktop clients: embedded on the data
                                      directory (as FLOWGATE_API_KEY's organization, or the local
                                      owner), or with --url a bridge to a remote gateway using
                                      FLOWGATE_API_KEY. Logs go to stderr.
  flowgate workflows list [--json]    The organization's workflows: id, name, enabled, trigger, updated
  flowgate run WORKFLOW_ID [--input JSON] [--watch]
                                      Start a run; prints its execution id. --input is a JSON object
                                      (the trigger's input). --watch prints each node's status as it
                                      changes, then the outcome; exit code 0 only on success
                                      (Ctrl-C stops watching, not the run).
  flowgate executions logs EXECUTION_ID [--json]
                                      A run's per-node log, oldest first, and its outcome
                                      These three call the running gateway's REST API with
                                      FLOWGATE_API_KEY, at --url URL, else FLOWGATE_BASE_URL, else
                                      the URL the gateway on FLOWGATE_DATA_DIR advertises.
  flowgate --help                     This help
  flowgate --version                  Print the version

Configuration is read from the environment (see README.md): PORT, HOST, FLOWGATE_DATA_DIR,
FLOWGATE_BASE_URL, FLOWGATE_RPC_URL_<chainId>, FLOWGATE_DEVNET, FLOWGATE_MASTER_KEY,
FLOWGATE_RATE_LIMITS, EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI, ...`;

async function serve(config: Config) {
  // Asked to stop at any point of the start, not only once it is done: a SIGTERM (or the parent's exit) that arrived
  // while the devnet or the gateway was still starting used to kill the gateway outright (node's default) or go
  // unnoticed (the parent was read after it had gone), leaving the devnet or the gateway running.
  const parent = process.ppid;
  let gateway: Awaited<ReturnType<typeof import('./gateway.ts').createGateway>> | undefined;
  let stopReason: string | undefined;
  const stopNow = async () => {
    console.log(`\n${stopReason}, shutting down (requests in flight get up to ${config.shutdownGraceMs} ms to finish; FLOWGATE_SHUTDOWN_GRACE_MS)`);
    await gateway!.close();
    process.exit(0);
  };
  const stop = (reason: string) => {
    if (stopReason) return;
    stopReason = reason;
    // Before the gateway exists the start sees stopReason and stops as soon as it does.
    if (gateway) void stopNow();
  };
  process.on('SIGINT', () => stop('SIGINT received'));
  process.on('SIGTERM', () => stop('SIGTERM received'));
  // `npm start` does not pass SIGTERM on: when the parent (npm, a shell) goes away we are re-parented, and stop too.
  if (config.exitWithParent) {
    setInterval(() => {
      if (process.ppid !== parent) stop(`parent process ${parent} exited`);
    }, 1_000).unref();
  }

  // anvil takes about 0.3 s to boot, so the devnet starts (and is set up) while the gateway's modules load rather
  // than after. With PostgreSQL the gateway first claims the devnet through the database, so it opens it itself.
  const devnet = config.databaseUrl ? undefined : import('./chains/devnet/embedded.ts').then(({ openDevnet }) => openDevnet(config));
  // Handled where the gateway awaits it; until then its failure is not an unhandled rejection.
  devnet?.catch(() => {});
  // Loaded on demand so `--help` stays instant.
  let createGateway: typeof import('./gateway.ts').createGateway;
  try {
    ({ createGateway } = await import('./gateway.ts'));
  } catch (error) {
    await devnet?.then((opened) => opened?.stop()).catch(() => {});
    throw error;
  }
  gateway = await createGateway(config, { devnet });
  if (stopReason) return stopNow();
  let url: string;
  try {
    url = await gateway.listen();
  } catch (error) {
    await gateway.close(); // the devnet and the store too: nothing is left running
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    throw new Error(
      `${config.host}:${config.port} is already in use (EADDRINUSE): stop what listens there, or choose another port, e.g. PORT=${config.port === 65535 ? 3001 : config.port + 1} npm start`,
    );
  }
  const base = config.baseUrl;
  const lines = [
    `Flowgate ${GATEWAY_VERSION} listening on ${url} (public base URL ${base})`,
    `  data directory: ${config.dataDir}`,
    `  MCP endpoint:   ${base}/mcp`,
    `  OpenAPI:        ${base}/openapi.json`,
    `  Dashboard:      ${base}/app (on a headless server: flowgate open)`,
  ];
  if (gateway.firstStart) {
    const { ownerKey } = gateway.firstStart;
    lines.push(
      '',
      `Owner API key for organization "${gateway.firstStart.organizationSlug}" (shown once; store it now):`,
      `  ${ownerKey}`,
      `More keys: ${dataDirPrefix(config.dataDir)}npx flowgate keys create --name my-agent`,
      '',
      mcpClientConfigs(base, ownerKey),
    );
  } else {
    lines.push('', `Create an API key with: ${dataDirPrefix(config.dataDir)}npx flowgate keys create --name my-agent`, '', mcpClientConfigs(base, '<API_KEY>'));
  }
  if (gateway.services.devnet) lines.splice(4, 0, await devnetLine(gateway.services, config));
  console.log(lines.join('\n'));
}

/** One line for the operator's terminal. The local RPC URL may appear here, never in an HTTP or MCP response. */
async function devnetLine(services: Services, config: Config): Promise<string> {
  const devnet = services.devnet!;
  const { DEFAULT_ORGANIZATION_SLUG } = await import('./org/organizations.ts');
  const { organization } = await services.organizations.ensure(DEFAULT_ORGANIZATION_SLUG);
  const wallet = await services.organizations.wallet(organization.id);
  const funds = wallet ? await devnet.balances(wallet.walletAddress) : undefined;
  const walletText = funds ? `wallet ${funds.address} holds ${funds.eth} ETH, ${funds.usdc} USDC` : 'no organization wallet';
  return `  devnet:         chain ${devnet.chainId} at ${config.rpcUrls[devnet.chainId]}; ${walletText}; USDC ${devnet.usdcAddress}`;
}

async function devnetFund(config: Config, args: string[]) {
  const { values, positionals } = parseArgs({ args, options: { eth: { type: 'string' }, usdc: { type: 'string' } }, allowPositionals: true, strict: true });
  if (positionals.length !== 1) throw new UsageError('devnet fund needs exactly one ADDRESS, e.g. flowgate devnet fund 0xabc... --eth 1 --usdc 100');
  const { connectDevnet, parseDevnetAddress, parseDevnetAmount, DEVNET_DEFAULT_FUNDING } = await import('./chains/devnet/devnet.ts');
  const { readRunningDevnetUrl } = await import('./chains/devnet/embedded.ts');
  // Refuse bad input before looking for a node.
  const check = <T>(parse: () => T): T => {
    try {
      return parse();
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
  };
  const address = check(() => parseDevnetAddress(positionals[0]!));
  const amounts = values.eth === undefined && values.usdc === undefined ? DEVNET_DEFAULT_FUNDING : { eth: values.eth, usdc: values.usdc };
  if (amounts.eth !== undefined) check(() => parseDevnetAmount(amounts.eth!, 18, 'ETH'));
  if (amounts.usdc !== undefined) check(() => parseDevnetAmount(amounts.usdc!, 6, 'USDC'));

  const url = config.rpcUrls[31337] ?? readRunningDevnetUrl(config.dataDir);
  if (!url) {
    throw new Error(
      `no devnet is running for data directory ${config.dataDir}: start the gateway (flowgate serve with FLOWGATE_DEVNET=auto) or set FLOWGATE_RPC_URL_31337`,
    );
  }
  const devnet = await connectDevnet(url).catch((error: Error) => {
    throw new Error(`the devnet at ${url} could not be used (${error.message.split('\n')[0]}); is the gateway still running?`);
  });
  const balances = await devnet.fund(address, amounts);
  console.log(`Funded ${balances.address} on chain ${devnet.chainId}: now ${balances.eth} ETH, ${balances.usdc} USDC (USDC ${devnet.usdcAddress})`);
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      console.log(HELP);
      return 0;
    }
    if (command === '--version' || command === '-v') {
      console.log(GATEWAY_VERSION);
      return 0;
    }
    if (command === 'serve') {
      await serve(await loadServeConfig(process.env));
      return -1; // keep running
    }
    if (command === 'mcp') {
      const { values } = parseArgs({ args: rest, options: { url: { type: 'string' } }, strict: true });
      const { runMcpCommand, StdioStartError } = await import('./mcp/stdio.ts');
      try {
        await runMcpCommand(values);
      } catch (error) {
        if (!(error instanceof StdioStartError)) throw error;
        console.error(`flowgate mcp: ${error.message}`);
        return 1;
      }
      process.exit(0); // the client closed stdin; open handles (engine timers, sockets) must not keep us alive
    }
    if (command === 'keys' && (rest[0] === 'create' || rest[0] === 'list' || rest[0] === 'revoke')) {
      const keys = await import('./cli/keys.ts');
      const run = { create: keys.keysCreate, list: keys.keysList, revoke: keys.keysRevoke }[rest[0]];
      await run(loadConfig(), rest.slice(1));
      return 0;
    }
    if (command === 'open') {
      const { open } = await import('./cli/open.ts');
      await open(loadConfig(), rest);
      return 0;
    }
    if (command === 'oauth' && (rest[0] === 'list' || rest[0] === 'revoke')) {
      const oauth = await import('./cli/oauth.ts');
      await (rest[0] === 'list' ? oauth.oauthList : oauth.oauthRevoke)(loadConfig(), rest.slice(1));
      return 0;
    }
    if (command === 'workflows' && rest[0] === 'list') {
      const { workflowsList } = await import('./cli/workflows.ts');
      return await workflowsList(rest.slice(1));
    }
    if (command === 'run') {
      const { run } = await import('./cli/run.ts');
      return await run(rest);
    }
    if (command === 'executions' && rest[0] === 'logs') {
      const { executionsLogs } = await import('./cli/executions.ts');
      return await executionsLogs(rest.slice(1));
    }
    if (command === 'db' && rest[0] === 'copy') {
      const { dbCopy } = await import('./cli/db-copy.ts');
      return await dbCopy(loadConfig(), rest.slice(1));
    }
    if (command === 'devnet' && rest[0] === 'fund') {
      await devnetFund(loadConfig(), rest.slice(1));
      return 0;
    }
    throw new UsageError(`Unknown command "${argv.join(' ')}". Run \`flowgate --help\`.`);
  } catch (error) {
    if (error instanceof ConfigError || error instanceof UsageError) {
      console.error(error.message);
      return 2;
    }
    if (error instanceof TypeError && (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`${error.message}. Run \`flowgate --help\`.`);
      return 2;
    }
    console.error(error instanceof Error ? `flowgate: ${error.message}` : error);
    return 1;
  }
}
