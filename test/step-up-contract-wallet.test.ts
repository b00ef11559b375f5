import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAddress, hashMessage } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { browserClient, siweMessage } from './helpers/session.ts';
import { compileContract } from './helpers/solidity.ts';

/**
 * A contract wallet (EIP-1271) signs in and passes step-up: viem asks the
 * wallet contract, on the chain of its sign-in (a real anvil node).
 */

/** A wallet contract that accepts what its owner key signed over the hash. */
function compileWallet() {
  const source = `pragma solidity ^0.8.0;
contract OwnedWallet {
  address public owner;
  constructor(address o) { owner = o; }
  function isValidSignature(bytes32 hash, bytes memory sig) external view returns (bytes4) {
    if (sig.length != 65) return 0xffffffff;
    bytes32 r; bytes32 s; uint8 v;
    assembly { r := mload(add(sig, 32)) s := mload(add(sig, 64)) v := byte(0, mload(add(sig, 96))) }
    return ecrecover(hash, v, r, s) == owner ? bytes4(0x1626ba7e) : bytes4(0xffffffff);
  }
}`;
  return compileContract('OwnedWallet', source);
}

let chain: TestChain;
let gw: TestGateway;
beforeAll(async () => {
  chain = await startTestChain(31337);
  gw = await startTestGateway({ env: { FLOWGATE_DEVNET: 'auto', FLOWGATE_RPC_URL_31337: chain.url } });
}, 120_000);
afterAll(async () => {
  await gw?.close();
  await chain?.stop();
});

describe('step-up with a contract wallet', () => {
  it('signs in through EIP-1271 and creates a key with a signature the contract accepts; a stranger key is refused', async () => {
    const ownerKey = privateKeyToAccount(generatePrivateKey());
    const { abi, bytecode } = compileWallet();
    const deployer = chain.walletClient(0);
    const hash = await deployer.deployContract({ abi, bytecode, args: [ownerKey.address], account: deployer.account!, chain: chain.chain });
    const receipt = await chain.publicClient.waitForTransactionReceipt({ hash });
    const walletAddress = getAddress(receipt.contractAddress!);
    // What the contract checks: the owner key's signature over the EIP-191 hash of the message.
    const signAs = (key: typeof ownerKey, message: string) => key.sign({ hash: hashMessage(message) });

    const client = browserClient(gw.url);
    const nonce = await client.fetch('/api/auth/siwe/nonce', { method: 'POST', json: { walletAddress, chainId: 31337 } });
    const message = siweMessage(gw.url, { address: walletAddress }, nonce.body.nonce, { chainId: 31337 });
    const verified = await client.fetch('/api/auth/siwe/verify', {
      method: 'POST',
      json: { message, signature: await signAs(ownerKey, message), walletAddress, chainId: 31337 },
    });
    expect(verified.status).toBe(200);

    const first = await client.fetch('/api/keys', { method: 'POST', json: { name: 'safe-bot' } });
    expect(first.body.code).toBe('signature_required');
    expect(first.body.challenge).toContain(walletAddress);

    const stranger = privateKeyToAccount(generatePrivateKey());
    const refused = await client.fetch('/api/keys', { method: 'POST', json: { name: 'safe-bot', signature: await signAs(stranger, first.body.challenge) } });
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe('wallet_signature_invalid');

    const again = await client.fetch('/api/keys', { method: 'POST', json: { name: 'safe-bot' } });
    const created = await client.fetch('/api/keys', { method: 'POST', json: { name: 'safe-bot', signature: await signAs(ownerKey, again.body.challenge) } });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^svc_/);
  });
});
