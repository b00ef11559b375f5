import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { erc20Abi } from 'viem';
import { fetchJson, freePort, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { callTool, connectMcp } from './helpers/mcp.ts';
import { action, linear, randomAddress, runWorkflow } from './helpers/web3.ts';

/**
 * A chain whose RPC node cannot be reached: every path answers 503
 * `rpc_unavailable` naming the chain, and nothing ever claims a revert that
 * did not happen (nor spends against the cap, nor leaks the RPC URL).
 */

let gw: TestGateway;
let rpcUrl: string;

beforeAll(async () => {
  // A port that was free a moment ago: connections are refused.
  rpcUrl = `http://127.0.0.1:${await freePort()}`;
  gw = await startTestGateway({ env: { FLOWGATE_RPC_URL_31337: rpcUrl, FLOWGATE_RATE_LIMITS: 'off' } });
});

afterAll(() => gw?.close());

const post = (path: string, body: unknown) => fetchJson(`${gw.url}${path}`, { method: 'POST', key: gw.ownerKey, body: JSON.stringify(body) });

function expectRpcUnavailable(res: { status: number; body: any; headers: Headers }) {
  expect(res.status).toBe(503);
  expect(res.body.code).toBe('rpc_unavailable');
  expect(res.body.chainId).toBe(31337);
  expect(res.body.error).toMatch(/31337/);
  expect(res.body.error).toContain('Flowgate Devnet');
  expect(res.headers.get('retry-after')).toBe('5');
  const text = JSON.stringify(res.body);
  expect(text).not.toMatch(/would revert|simulation_failed/i);
  expect(text).not.toContain(rpcUrl.replace('http://', ''));
}

describe('unreachable RPC', () => {
  test('a simulated transfer is 503 rpc_unavailable, not a would-revert 400', async () => {
    expectRpcUnavailable(await post('/api/execute/transfer', { chainId: 31337, recipientAddress: randomAddress(), amount: '0.001', simulate: true }));
  });

  test('a real transfer is 503 rpc_unavailable and reserves nothing against the daily cap', async () => {
    expectRpcUnavailable(await post('/api/execute/transfer', { chainId: 31337, recipientAddress: randomAddress(), amount: '0.001' }));
    const caps = await fetchJson(`${gw.url}/api/analytics/spend-cap`, { key: gw.ownerKey });
    expect(caps.body.dailyUsedWei).toBe('0');
  });

  test('a contract read is 503 rpc_unavailable, not read_reverted', async () => {
    const abi = JSON.stringify(erc20Abi);
    expectRpcUnavailable(await post('/api/execute/contract-call', { chainId: 31337, contractAddress: randomAddress(), functionName: 'totalSupply', abi }));
  });

  test('a web3 read through POST /api/execute/node is 503 rpc_unavailable naming the chain', async () => {
    expectRpcUnavailable(await post('/api/execute/node', { actionType: 'web3/check-balance', config: { network: '31337', address: randomAddress() } }));
  });

  test('over MCP the tool result carries rpc_unavailable', async () => {
    const client = await connectMcp(gw.url, gw.ownerKey);
    try {
      const result = await callTool(client, 'execute_transfer', { chain_id: '31337', to_address: randomAddress(), amount: '0.001', simulate: true });
      expect(result.isError).toBe(true);
      expect(result.body.code).toBe('rpc_unavailable');
      expect(JSON.stringify(result.body)).not.toMatch(/would revert|wouldRevert|simulation_failed/i);
    } finally {
      await client.close();
    }
  });

  test('a workflow step fails with rpc_unavailable, never a revert', async () => {
    const run = await runWorkflow(gw, linear(action('bal', 'Balance', { actionType: 'web3/check-balance', network: '31337', address: randomAddress() })));
    expect(run.execution.status).toBe('error');
    const step = run.step('bal');
    expect(step.status).toBe('error');
    expect(step.error).toMatch(/could not be reached/);
    expect(step.error).toContain('Flowgate Devnet (chain 31337)');
    expect(step.error).not.toMatch(/would revert|reverted/i);

    const send = await runWorkflow(
      gw,
      linear(action('pay', 'Pay', { actionType: 'web3/transfer-funds', network: '31337', amount: '0.001', recipientAddress: randomAddress() })),
    );
    expect(send.execution.status).toBe('error');
    expect(send.step('pay').error).toMatch(/could not be reached/);
    expect(send.step('pay').error).not.toMatch(/would revert/i);
    expect(send.execution.transactionHashes).toEqual([]);
  });
});
