import type { AnyTool, Principal, ToolContext } from '../../tools/define.ts';
import type { Config } from '../config.ts';
import { DEFAULT_ORGANIZATION_SLUG } from '../org/organizations.ts';
import type { Services } from '../services.ts';
import { GATEWAY_VERSION } from '../version.ts';
import { MCP_INSTRUCTIONS } from '../discovery/identity.ts';
import { connectRemoteToolSet, serveMcpStdio, type McpServerInfo } from './sdk.ts';
import { createToolSet } from './toolset.ts';

/**
 * `flowgate mcp`: the registry over stdio, for desktop clients that launch a
 * local process. Two modes:
 * - embedded: tools run in this process on the local data directory, as the
 *   organization of FLOWGATE_API_KEY or, without one, the local owner;
 * - bridge (`--url`): every list and call is forwarded to a remote gateway's
 *   /mcp with FLOWGATE_API_KEY.
 * stdout carries only the protocol; everything human goes to stderr.
 */

export class StdioStartError extends Error {}

const log = (message: string) => process.stderr.write(`[flowgate mcp] ${message}\n`);

function serverInfo(instructions = MCP_INSTRUCTIONS): McpServerInfo {
  return { name: 'flowgate', title: 'Flowgate', version: GATEWAY_VERSION, instructions };
}

/** The caller of embedded mode: the key's principal, or the default organization's owner. */
async function localPrincipal(services: Services, apiKey: string | undefined): Promise<Principal> {
  if (apiKey) {
    const principal = await services.keys.authenticate(apiKey);
    if (!principal || principal.kind !== 'api_key') {
      throw new StdioStartError(
        `FLOWGATE_API_KEY is not a valid organization key in the data directory ${services.config.dataDir}. Create one with \`flowgate keys create --name NAME\`, or unset FLOWGATE_API_KEY to act as the local owner.`,
      );
    }
    return principal;
  }
  const { organization, owner } = await services.organizations.ensure(DEFAULT_ORGANIZATION_SLUG);
  return { kind: 'api_key', organizationId: organization.id, userId: owner.id, keyId: 'local-owner', scope: null };
}

export async function runEmbedded(
  config: Config,
  registry: readonly AnyTool[],
  apiKey: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const { openServingRuntime, readAdvertisedBaseUrl } = await import('../gateway.ts');
  // The same world as `flowgate serve` on this directory: its URLs, its devnet, its prices.
  const advertised = env.FLOWGATE_BASE_URL ? undefined : readAdvertisedBaseUrl(config.dataDir);
  if (advertised) config.baseUrl = advertised;
  const runtime = await openServingRuntime(config, { mintOwnerKey: false });
  let principal: Principal;
  try {
    principal = await localPrincipal(runtime.services, apiKey);
  } catch (error) {
    await runtime.close();
    throw error;
  }
  const context = (): ToolContext => ({
    principal,
    services: runtime.services,
    internalService: false,
    ip: 'stdio',
    transport: 'mcp',
    tools: registry,
    setHeader: () => {},
    setStatus: () => {},
  });
  // Runs started from the desktop must progress while the client waits for them.
  await runtime.services.engine.start();
  const { closed } = await serveMcpStdio(serverInfo(), createToolSet(registry, principal, context));
  log(`embedded on ${config.dataDir}, as ${apiKey ? `key ${principal.keyId}` : 'the local owner'} of organization ${principal.organizationId}`);
  await closed;
  await runtime.services.engine.stop();
  await runtime.close();
}

/** Accepts the gateway's base URL or its /mcp URL. */
export function gatewayBase(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new StdioStartError(`--url must be the gateway's URL, such as https://flowgate.example.com (got "${url}")`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new StdioStartError(`--url must be an http(s) URL (got "${url}")`);
  return parsed.href.replace(/\/+$/, '').replace(/\/mcp$/, '');
}

/** Checks the key before serving, so a wrong key is a clear message and a non-zero exit, never a silent hang. */
async function checkRemoteKey(base: string, apiKey: string): Promise<void> {
  let response: Response;
  try {
    response = await fetch(`${base}/api/keys`, { headers: { Authorization: `Bearer ${apiKey}` }, signal: AbortSignal.timeout(15_000) });
  } catch (error) {
    throw new StdioStartError(`cannot reach the gateway at ${base}: ${(error as Error).message}`);
  }
  if (response.status === 401 || response.status === 403) {
    throw new StdioStartError(
      `the gateway at ${base} refused FLOWGATE_API_KEY (HTTP ${response.status}). Check the key (organization keys start with svc_) and that it belongs to this gateway.`,
    );
  }
  if (!response.ok) throw new StdioStartError(`the gateway at ${base} answered the key check with HTTP ${response.status}; is ${base} a Flowgate gateway?`);
}

export async function runBridge(url: string, apiKey: string | undefined): Promise<void> {
  const base = gatewayBase(url);
  if (apiKey) await checkRemoteKey(base, apiKey);
  else log(`no FLOWGATE_API_KEY: bridging anonymously, only the public tools of ${base} are available`);
  let remote;
  try {
    remote = await connectRemoteToolSet(`${base}/mcp`, apiKey ? { Authorization: `Bearer ${apiKey}` } : {}, {
      name: 'flowgate-stdio-bridge',
      version: GATEWAY_VERSION,
    });
  } catch (error) {
    throw new StdioStartError(`cannot connect to ${base}/mcp: ${(error as Error).message}`);
  }
  const { closed } = await serveMcpStdio(serverInfo(remote.instructions), remote);
  log(`bridging stdio to ${base}/mcp`);
  await closed;
  await remote.close();
}

/**
 * `flowgate mcp [--url URL]`. Resolves when the client disconnects; throws
 * StdioStartError for a start-up problem the user must fix.
 */
export async function runMcpCommand(args: { url?: string }, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  // Anything printed with console.log (ours or a dependency's) would corrupt the protocol on stdout.
  console.log = console.error;
  console.info = console.error;
  console.debug = console.error;
  const apiKey = env.FLOWGATE_API_KEY?.trim() || undefined;
  if (args.url !== undefined) return runBridge(args.url, apiKey);
  const [{ loadConfig }, { registry }] = await Promise.all([import('../config.ts'), import('../../tools/index.ts')]);
  return runEmbedded(loadConfig(env), registry, apiKey, env);
}
