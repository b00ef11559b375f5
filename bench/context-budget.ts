/**
 * The context-budget rows of `npm run bench`: how many bytes an agent's
 * context takes in for a full tools/list and the large discovery answers,
 * measured as the JSON-RPC response bodies of the real gateway's /mcp
 * (sizes, not timings).
 */

export interface BudgetRow {
  name: string;
  bytes: number;
}

async function rpcBytes(gatewayUrl: string, key: string | undefined, method: string, params: Record<string, unknown>): Promise<number> {
  const response = await fetch(`${gatewayUrl}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = await response.text();
  if (!response.ok || body.includes('"isError":true')) throw new Error(`${method} ${JSON.stringify(params)} failed: ${body.slice(0, 300)}`);
  return Buffer.byteLength(body);
}

export async function measureContextBudget(gatewayUrl: string, ownerKey: string): Promise<BudgetRow[]> {
  const call = (name: string, args: Record<string, unknown> = {}) => rpcBytes(gatewayUrl, ownerKey, 'tools/call', { name, arguments: args });
  return [
    { name: 'tools/list, full organization (owner key)', bytes: await rpcBytes(gatewayUrl, ownerKey, 'tools/list', {}) },
    { name: 'tools/list, anonymous', bytes: await rpcBytes(gatewayUrl, undefined, 'tools/list', {}) },
    { name: 'list_action_schemas (default: summaries)', bytes: await call('list_action_schemas') },
    { name: 'list_action_schemas detail=full', bytes: await call('list_action_schemas', { detail: 'full' }) },
    { name: 'search_protocol_actions (no query: summaries)', bytes: await call('search_protocol_actions') },
    { name: 'search_protocol_actions query="supply usdc on base"', bytes: await call('search_protocol_actions', { query: 'supply usdc on base' }) },
    { name: 'get_plugin web3/write-contract', bytes: await call('get_plugin', { pluginType: 'web3/write-contract' }) },
  ];
}

export function printContextBudget(rows: BudgetRow[]): void {
  console.log('\nContext budget (bytes of the JSON-RPC response from /mcp; structuredContent plus the same JSON as text)\n');
  console.log(['| MCP request | bytes | KB |', '|---|---:|---:|'].join('\n'));
  for (const row of rows) console.log(`| ${row.name} | ${row.bytes} | ${(row.bytes / 1000).toFixed(1)} |`);
}
