import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { browserClient, siweMessage } from './helpers/session.ts';
import { fixtures, place } from './helpers/catalog-fixtures.ts';

/**
 * EIP-1271: a contract wallet on a real anvil signs in. The contract
 * (contracts/fixtures/Erc1271WalletFixture.sol) accepts signatures by its
 * owner EOA; the gateway's chain 31337 points at that anvil, so the check
 * goes through the chain client's isValidSignature call.
 */

let chain: TestChain;
let gw: TestGateway;
const owner = privateKeyToAccount(generatePrivateKey());
const wallet = '0x000000000000000000000000000000000000c0DE' as const;

beforeAll(async () => {
  chain = await startTestChain(31337);
  gw = await startTestGateway({ env: { FLOWGATE_RPC_URL_31337: chain.url } });
  const placed = await place(chain, fixtures.erc1271Wallet, wallet);
  await placed.set('setOwner', [owner.address]);
});

afterAll(async () => {
  await gw?.close();
  await chain?.stop();
});

async function attempt(signer: ReturnType<typeof privateKeyToAccount>, chainId = 31337) {
  const client = browserClient(gw.url);
  const nonce = await client.fetch('/api/auth/siwe/nonce', { method: 'POST', json: { walletAddress: wallet, chainId } });
  expect(nonce.status).toBe(200);
  const message = siweMessage(gw.url, { address: wallet }, nonce.body.nonce, { chainId });
  const signature = await signer.signMessage({ message });
  const res = await client.fetch('/api/auth/siwe/verify', { method: 'POST', json: { message, signature, walletAddress: wallet, chainId } });
  return { client, res };
}

describe('contract-wallet sign-in (EIP-1271)', () => {
  it("signs in the contract wallet with its owner's signature; the session belongs to the contract address", async () => {
    const { client, res } = await attempt(owner);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.user.walletAddress).toBe(wallet);
    expect(res.body.created).toBe(true);
    const session = await client.fetch('/api/auth/session');
    expect(session.status).toBe(200);
    expect(session.body.user.walletAddress).toBe(wallet);
  });

  it('refuses a signature by anyone but the owner', async () => {
    const { client, res } = await attempt(privateKeyToAccount(generatePrivateKey()));
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('siwe_invalid');
    expect(res.body.error).toMatch(/contract wallet did not accept it under EIP-1271/);
    expect(res.headers.get('set-cookie')).toBeNull();
    expect((await client.fetch('/api/auth/session')).status).toBe(401);
  });
});
