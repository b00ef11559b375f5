import solc from 'solc';
import type { Abi, Address, Hex } from 'viem';
import type { TestChain } from './anvil.ts';

/** Compiles one Solidity contract named `name` from `source` with solc-js. */
export function compileContract(name: string, source: string): { abi: Abi; bytecode: Hex } {
  const out = JSON.parse(
    solc.compile(
      JSON.stringify({
        language: 'Solidity',
        sources: { [`${name}.sol`]: { content: source } },
        settings: { outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } },
      }),
    ),
  );
  const contract = out.contracts[`${name}.sol`][name];
  return { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` };
}

/** Deploys a compiled contract from anvil's account `from` and waits for its address. */
export async function deployContract(chain: TestChain, contract: { abi: Abi; bytecode: Hex }, from = 1): Promise<Address> {
  const hash = await chain.walletClient(from).deployContract({ ...contract, account: chain.account(from), chain: chain.chain });
  return (await chain.publicClient.waitForTransactionReceipt({ hash })).contractAddress!;
}

/**
 * A till that takes ETH (a plain transfer, or `pay()`) until `close()` has run: a payment sent while it is open and
 * mined after `close` reverts at inclusion, though its estimate passed.
 */
export const tillContract = () =>
  (till ??= compileContract(
    'Till',
    'pragma solidity ^0.8.0; contract Till { bool public open = true; function close() external { open = false; } function pay() external payable { require(open, "till closed"); } receive() external payable { require(open, "till closed"); } }',
  ));
let till: { abi: Abi; bytecode: Hex } | undefined;

/** Closes a till with a higher tip than any gateway send, so `close` is ordered first in the next block. */
export async function closeTillFirst(chain: TestChain, address: Address, from = 1): Promise<void> {
  await chain.walletClient(from).writeContract({
    address,
    abi: tillContract().abi,
    functionName: 'close',
    account: chain.account(from),
    chain: chain.chain,
    maxPriorityFeePerGas: 10n ** 13n,
    maxFeePerGas: 10n ** 14n,
  });
}
