import { afterAll, beforeAll, expect, test } from 'vitest';
import { applyGasMultiplier } from '../src/chains/transactions.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { compileContract, deployContract } from './helpers/solidity.ts';

/** Gas limit = estimate × multiplier; on chain 999 (HyperEVM) more than 3,000,000 gas is refused before signing. */

let chain: TestChain;
let gw: TestGateway;
let burner: `0x${string}`;
const abi = [{ type: 'function', name: 'burn', stateMutability: 'nonpayable', inputs: [{ name: 'rounds', type: 'uint256' }], outputs: [] }] as const;

beforeAll(async () => {
  chain = await startTestChain(999);
  gw = await startTestGateway({ env: { FLOWGATE_RPC_URL_999: chain.url } });
  // A contract whose gas use grows with `rounds` (one storage write per round).
  const source =
    'pragma solidity ^0.8.0; contract Burner { mapping(uint256 => uint256) s; function burn(uint256 rounds) external { for (uint256 i = 0; i < rounds; i++) s[i] = i + 1; } }';
  burner = await deployContract(chain, { abi, bytecode: compileContract('Burner', source).bytecode }, 0);
  const org = await gw.gateway.services.organizations.ensure('default');
  await chain.setBalance((await gw.gateway.services.organizations.wallet(org.organization.id))!.walletAddress as `0x${string}`, '10');
});

afterAll(async () => {
  await gw?.close();
  await chain?.stop();
});

test('the multiplier is applied exactly and rounds up', () => {
  expect(applyGasMultiplier(21_000n, '2')).toBe(42_000n);
  expect(applyGasMultiplier(21_001n, '1.5')).toBe(31_502n);
  expect(applyGasMultiplier(100n, '1.25')).toBe(125n);
});

const call = (rounds: number, extra: Record<string, unknown> = {}) =>
  fetchJson(`${gw.url}/api/execute/contract-call`, {
    method: 'POST',
    key: gw.ownerKey,
    body: JSON.stringify({
      chainId: 999,
      contractAddress: burner,
      functionName: 'burn',
      functionArgs: JSON.stringify([String(rounds)]),
      abi: JSON.stringify(abi),
      ...extra,
    }),
  });

test('on chain 999 a call under the block cap is sent with the 1.5x default', async () => {
  const res = await call(10);
  expect(res.status).toBe(202);
  expect(res.body.status).toBe('completed');
  const tx = await chain.publicClient.getTransaction({ hash: res.body.transactionHash });
  const estimate = BigInt(res.body.receipts[0].gasUsed);
  // The limit is 1.5x the node's estimate (which is at least what was used).
  expect(tx.gas).toBeGreaterThanOrEqual((estimate * 3n) / 2n);
  expect(tx.gas).toBeLessThan(estimate * 2n);
});

test('on chain 999 a limit over 3,000,000 gas is refused before signing', async () => {
  const nonce = await chain.publicClient.getTransactionCount({
    address: (await fetchJson(`${gw.url}/api/user/wallet`, { key: gw.ownerKey })).body.walletAddress,
  });
  const res = await call(100, { gasLimitMultiplier: '1.5' }); // 100 fresh storage slots ≈ 2.2M gas → 3.3M limit
  expect(res.status).toBe(202);
  expect(res.body.status).toBe('failed');
  expect(res.body.error).toMatch(/exceeds chain 999's 3,000,000 gas block cap; nothing was signed/);
  expect(res.body.receipts).toEqual([]);
  const after = await chain.publicClient.getTransactionCount({
    address: (await fetchJson(`${gw.url}/api/user/wallet`, { key: gw.ownerKey })).body.walletAddress,
  });
  expect(after).toBe(nonce);
});
