import type { Config } from '../config.ts';
import { MCP_PROTOCOL_VERSIONS } from '../mcp/sdk.ts';
import { discoveryUrls, LONG_DESCRIPTION, PRODUCT_NAME } from './identity.ts';
import { A2A_PROTOCOL_VERSION } from './agent-card.ts';

/**
 * ERC-8004 registration document (registration-v1): what the agent's onchain
 * `agentURI` resolves to, also served at /.well-known/agent-registration.json
 * so the endpoint domain can be checked against the registration.
 */

export const ERC8004_REGISTRATION_TYPE = 'https://eips.ethereum.org/EIPS/eip-8004#registration-v1';

export function buildAgentRegistration(config: Pick<Config, 'baseUrl'>, registration: NonNullable<Config['agentRegistration']>) {
  const urls = discoveryUrls(config.baseUrl);
  return {
    type: ERC8004_REGISTRATION_TYPE,
    name: PRODUCT_NAME,
    description: LONG_DESCRIPTION,
    services: [
      { name: 'web', endpoint: urls.docs },
      { name: 'MCP', endpoint: urls.mcp, version: MCP_PROTOCOL_VERSIONS[0]! },
      { name: 'A2A', endpoint: urls.agentCard, version: A2A_PROTOCOL_VERSION },
    ],
    registrations: [{ agentId: Number(registration.agentId), agentRegistry: registration.agentRegistry }],
    supportedTrust: [] as string[],
    x402Support: false,
    active: true,
  };
}
