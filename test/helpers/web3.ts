import fs from 'node:fs';
import { erc20Abi, getAddress, parseEther, type Abi, type Address, type Hex } from 'viem';
import { protocols } from '../../src/actions/protocols.ts';
import { testUsdcAbi, testUsdcBytecode } from '../../src/chains/devnet/test-usdc.ts';
import type { TestChain } from './anvil.ts';
import { fetchJson, type TestGateway } from './gateway.ts';

/** Shared by the web3 step and execute/node tests: workflow runs, fixtures on anvil, random recipients. */

export const randomAddress = (): Address =>
  getAddress(`0x${[...crypto.getRandomValues(new Uint8Array(20))].map((b) => b.toString(16).padStart(2, '0')).join('')}`);

/** The mined transaction from `address` with `nonce`, looked up through the latest ten blocks. */
export async function minedTransaction(client: Pick<TestChain['publicClient'], 'getBlockNumber' | 'getBlock'>, address: Address, nonce: number) {
  const latest = await client.getBlockNumber({ cacheTime: 0 });
  for (let n = latest; n > latest - 10n && n >= 0n; n--) {
    const block = await client.getBlock({ blockNumber: n, includeTransactions: true });
    const tx = block.transactions.find((t) => t.from.toLowerCase() === address.toLowerCase() && t.nonce === nonce);
    if (tx) return tx;
  }
  return undefined;
}

export const trigger = () => ({ id: 't', type: 'trigger', data: { label: 'Start', config: { triggerType: 'Manual' } } });
export const action = (id: string, label: string, config: Record<string, unknown>) => ({ id, type: 'action', data: { label, config } });
export const edges = (...pairs: [string, string][]) => pairs.map(([source, target], i) => ({ id: `e${i}`, source, target }));

/** A chain of nodes after the trigger, in the order given. */
export const linear = (...nodes: ReturnType<typeof action>[]) => ({
  nodes: [trigger(), ...nodes],
  edges: edges(...nodes.map((n, i) => [i === 0 ? 't' : nodes[i - 1]!.id, n.id] as [string, string])),
});

export interface RunResult {
  executionId: string;
  execution: any;
  logs: any[];
  /** The log of a node by id (the last one for iteration rows). */
  step(nodeId: string): any;
}

/** Creates a workflow over REST, runs it, and polls until the run leaves pending/running. */
export async function runWorkflow(
  gw: TestGateway,
  graph: { nodes: unknown[]; edges: unknown[] },
  input: Record<string, unknown> = {},
  key = gw.ownerKey,
): Promise<RunResult> {
  const api = (path: string, init: Parameters<typeof fetchJson>[1] = {}) => fetchJson(`${gw.url}${path}`, { key, ...init });
  const created = await api('/api/workflows/create', { method: 'POST', body: JSON.stringify({ name: 'web3 test', ...graph }) });
  if (created.status !== 200) throw new Error(`create failed ${created.status}: ${JSON.stringify(created.body)}`);
  const started = await api(`/api/workflows/${created.body.id}/execute`, { method: 'POST', body: JSON.stringify({ input }) });
  if (started.status !== 200) throw new Error(`execute failed ${started.status}: ${JSON.stringify(started.body)}`);
  const executionId = started.body.executionId as string;
  const deadline = Date.now() + 60_000;
  let status = 'pending';
  while (['pending', 'running'].includes(status)) {
    if (Date.now() > deadline) throw new Error(`execution ${executionId} still ${status}`);
    await new Promise((r) => setTimeout(r, 100));
    status = (await api(`/api/workflows/executions/${executionId}/status`)).body.status;
  }
  const full = await api(`/api/workflows/executions/${executionId}/details`);
  if (full.status !== 200) throw new Error(`get execution failed ${full.status}: ${JSON.stringify(full.body)}`);
  const logs = full.body.logs as any[];
  return { executionId, execution: full.body.execution, logs, step: (nodeId) => logs.find((l) => l.nodeId === nodeId) };
}

export const tokenBalance = (chain: TestChain, token: Address, owner: Address) =>
  chain.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [owner] });

/** Deploys a fresh copy of the test USDC artifact (6 decimals) on any anvil, owned by anvil account 0, and mints to `holder`. */
export async function deployToken(chain: TestChain, holder: Address, units: bigint): Promise<Address> {
  const owner = chain.walletClient(0);
  const hash = await owner.deployContract({
    abi: testUsdcAbi,
    bytecode: testUsdcBytecode,
    args: [owner.account!.address],
    account: owner.account!,
    chain: chain.chain,
  });
  const receipt = await chain.publicClient.waitForTransactionReceipt({ hash });
  const token = receipt.contractAddress!;
  const mint = await owner.writeContract({
    address: token,
    abi: testUsdcAbi,
    functionName: 'mint',
    args: [holder, units],
    account: owner.account!,
    chain: chain.chain,
  });
  await chain.publicClient.waitForTransactionReceipt({ hash: mint });
  return token;
}

interface RuntimeArtifact {
  abi: Abi;
  deployedBytecode: Hex;
}

export const aavePoolFixture = JSON.parse(fs.readFileSync(new URL('../fixtures/aave-pool-fixture.json', import.meta.url), 'utf8')) as RuntimeArtifact;

/** The real Aave V3 Pool address of `chainId` from the registry data. */
export const aavePoolAddress = (chainId: number): Address => protocols.find((p) => p.protocol === 'aave-v3')!.addresses[chainId]!;

/** Puts the fixture Pool at the real Aave Pool address of the chain. */
export async function installAavePool(chain: TestChain): Promise<Address> {
  const address = aavePoolAddress(chain.chain.id);
  await chain.testClient.setCode({ address, bytecode: aavePoolFixture.deployedBytecode });
  return address;
}

export const ether = parseEther;
