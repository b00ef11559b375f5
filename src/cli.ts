import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { isKeyScope, KEY_SCOPES } from './auth/keys.ts';
import { DEFAULT_ORGANIZATION_SLUG } from './org/organizations.ts';
import { GATEWAY_VERSION } from './version.ts';
import { mcpClientConfigs } from './mcp/client-config.ts';

const HELP = `flowgate ${GATEWAY_VERSION} — MCP-first agent gateway for onchain workflow automation

Usage:
  flowgate serve                      Run the gateway (what \`npm start\` runs)
  flowgate keys create --name NAME [--scope mcp:read|mcp:write|mcp:admin] [--org SLUG]
                                      Create an organization API key in the data directory;
                                      the key is the last line of output. --org names another
                                      organization, created (with owner and wallet) if missing.
  flowgate mcp [--url URL]            MCP over stdio for desktop clients: embedded on the data
                                      directory (as FLOWGATE_API_KEY's organization, or the local
                                      owner), or with --url a bridge to a remote gateway using
                                      FLOWGATE_API_KEY. Logs go to stderr.
  flowgate --help                     This help
  flowgate --version                  Print the version

Configuration is read from the environment (see README.md): PORT, HOST, FLOWGATE_DATA_DIR,
FLOWGATE_BASE_URL, FLOWGATE_RPC_URL_<chainId>, FLOWGATE_DEVNET, FLOWGATE_MASTER_KEY,
FLOWGATE_RATE_LIMITS, EXECUTE_DEFAULT_DAILY_VALUE_CAP_WEI, ...`;

class UsageError extends Error {}

async function serve(config: Config) {
  // Loaded on demand so `--help` stays instant.
  const { createGateway } = await import('./gateway.ts');
  const gateway = await createGateway(config);
  const url = await gateway.listen();
  const base = config.baseUrl;
  const lines = [`Flowgate ${GATEWAY_VERSION} listening on ${url} (public base URL ${base})`, `  data directory: ${config.dataDir}`, `  MCP endpoint:   ${base}/mcp`, `  OpenAPI:        ${base}/openapi.json`];
  if (gateway.firstStart) {
    const { ownerKey } = gateway.firstStart;
    lines.push(
      '',
      `Owner API key for organization "${gateway.firstStart.organizationSlug}" (shown once; store it now):`,
      `  ${ownerKey}`,
      '',
      mcpClientConfigs(base, ownerKey),
    );
  } else {
    lines.push('', 'Create an API key with: npx flowgate keys create --name my-agent', '', mcpClientConfigs(base, '<API_KEY>'));
  }
  console.log(lines.join('\n'));

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${signal} received, shutting down`);
    await gateway.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

async function createKey(config: Config, args: string[]) {
  const { values } = parseArgs({
    args,
    options: { name: { type: 'string' }, scope: { type: 'string' }, org: { type: 'string' } },
    strict: true,
  });
  if (!values.name?.trim()) throw new UsageError('keys create needs --name NAME');
  const scope = values.scope ?? null;
  if (scope !== null && !isKeyScope(scope)) throw new UsageError(`--scope must be one of ${KEY_SCOPES.join(', ')} (got "${scope}"); omit it for an unrestricted key`);
  const slug = (values.org ?? DEFAULT_ORGANIZATION_SLUG).trim();
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(slug)) throw new UsageError(`--org must be a lowercase slug of letters, digits and dashes (got "${slug}")`);

  const { openRuntime } = await import('./gateway.ts');
  const runtime = await openRuntime(config);
  try {
    const { organization, owner, created } = await runtime.services.organizations.ensure(slug);
    const { record, key } = await runtime.services.keys.create({ organizationId: organization.id, userId: owner.id, name: values.name.trim(), scope });
    console.log(`${created ? 'Created organization' : 'Organization'}: ${organization.slug} (${organization.id})`);
    console.log(`Key ${record.id} "${record.name}", scope ${record.scope ?? 'unrestricted'}; shown once:`);
    console.log(key);
  } finally {
    await runtime.close();
  }
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
      await serve(loadConfig());
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
    if (command === 'keys' && rest[0] === 'create') {
      await createKey(loadConfig(), rest.slice(1));
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
