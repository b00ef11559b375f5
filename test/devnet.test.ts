import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { createPublicClient, createWalletClient, hashDomain, http, parseEther, parseSignature, parseUnits, toHex, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ABI_FILE, ARTIFACT_FILE, compileTestUsdc, renderAbiModule, renderArtifact } from '../scripts/build-contracts.ts';
import { readRunningDevnetUrl } from '../src/chains/devnet/embedded.ts';
import { TEST_USDC_ADDRESS, testUsdcAbi, testUsdcDeployer } from '../src/chains/devnet/test-usdc.ts';
import { createStablecoinRegistry } from '../src/chains/stablecoins.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { fetchJson, startTestGateway, tempDir, type TestGateway } from './helpers/gateway.ts';

const exec = promisify(execFile);
const BIN = path.resolve('bin/flowgate.js');
const DEAD: Address = '0x000000000000000000000000000000000000dEaD';

/** Runs the CLI without blocking this process (it owns the anvil the CLI talks to). */
async function cli(args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await exec(process.execPath, [BIN, ...args], { env: { ...process.env, FLOWGATE_DEVNET: 'off', ...env }, timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function clientsFor(url: string) {
  const chain = { ...foundry, rpcUrls: { default: { http: [url] } } };
  return { chain, publicClient: createPublicClient({ chain, transport: http(url, { retryCount: 0 }) }) };
}

const usdcBalance = (publicClient: ReturnType<typeof clientsFor>['publicClient'], address: Address) =>
  publicClient.readContract({ address: TEST_USDC_ADDRESS, abi: testUsdcAbi, functionName: 'balanceOf', args: [address] });

async function orgWallet(gw: TestGateway): Promise<Address> {
  const { organization } = await gw.gateway.services.organizations.ensure('default');
  return (await gw.gateway.services.organizations.wallet(organization.id))!.walletAddress as Address;
}

const answers = async (url: string) => {
  try {
    await createPublicClient({ transport: http(url, { retryCount: 0, timeout: 2_000 }) }).getChainId();
    return true;
  } catch {
    return false;
  }
};

describe('stablecoin registry', () => {
  it('looks tokens up by chain and address, case-insensitively', () => {
    const registry = createStablecoinRegistry();
    expect(registry.lookup(8453, '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913')).toEqual({
      address: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
      symbol: 'USDC',
      decimals: 6,
    });
    expect(registry.lookup(1, '0x6B175474E89094C44DA98B954EEDEAC495271D0F')?.decimals).toBe(18);
    expect(registry.lookup(1, '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913')).toBeUndefined(); // Base USDC is not a token on Ethereum
    expect(registry.lookup(31337, TEST_USDC_ADDRESS)).toBeUndefined();
    for (const chainId of [1, 8453, 42161, 10, 137, 11155111, 84532]) expect(registry.list(chainId).some((t) => t.symbol === 'USDC')).toBe(true);
    registry.register(31337, { address: TEST_USDC_ADDRESS.toLowerCase(), symbol: 'USDC', decimals: 6 });
    expect(registry.lookup(31337, TEST_USDC_ADDRESS.toUpperCase().replace('0X', '0x'))?.address).toBe(TEST_USDC_ADDRESS);
    expect(() => registry.register(31337, { address: '0xnot', symbol: 'X', decimals: 6 })).toThrow('Invalid stablecoin address');
  });
});

describe('test USDC artifact', () => {
  it('is what the committed source compiles to', () => {
    const fresh = compileTestUsdc();
    expect(fs.readFileSync(ARTIFACT_FILE, 'utf8')).toBe(renderArtifact(fresh));
    expect(fs.readFileSync(ABI_FILE, 'utf8')).toBe(renderAbiModule(fresh));
  }, 120_000);
});

describe('embedded devnet (FLOWGATE_DEVNET=auto)', () => {
  const dataDir = tempDir();
  let gw: TestGateway;
  let rpcUrl: string;
  let client: ReturnType<typeof clientsFor>;
  // A payer with its own key (the organization key stays sealed), and a relayer that submits its authorizations.
  const payer = privateKeyToAccount(generatePrivateKey());
  const relayer = privateKeyToAccount(generatePrivateKey());
  const payee = privateKeyToAccount(generatePrivateKey()).address;
  let transferHash: Hex;

  beforeAll(async () => {
    gw = await startTestGateway({ dataDir, env: { FLOWGATE_DEVNET: 'auto' } });
    rpcUrl = gw.gateway.services.config.rpcUrls[31337]!;
    client = clientsFor(rpcUrl);
  });
  afterAll(() => gw?.close());

  it('spawns anvil, deploys the test USDC and funds the organization wallet', async () => {
    expect(rpcUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(readRunningDevnetUrl(dataDir)).toBe(rpcUrl);
    const { devnet, stablecoins } = gw.gateway.services;
    expect(devnet?.usdcAddress).toBe(TEST_USDC_ADDRESS);
    expect(stablecoins.lookup(31337, TEST_USDC_ADDRESS.toLowerCase())).toEqual({ address: TEST_USDC_ADDRESS, symbol: 'USDC', decimals: 6 });

    const read = (functionName: 'name' | 'symbol' | 'version' | 'decimals' | 'DOMAIN_SEPARATOR') =>
      client.publicClient.readContract({ address: TEST_USDC_ADDRESS, abi: testUsdcAbi, functionName });
    expect(await read('name')).toBe('USD Coin');
    expect(await read('symbol')).toBe('USDC');
    expect(await read('version')).toBe('2');
    expect(await read('decimals')).toBe(6);
    expect(await read('DOMAIN_SEPARATOR')).toBe(
      hashDomain({
        domain: { name: 'USD Coin', version: '2', chainId: 31337n, verifyingContract: TEST_USDC_ADDRESS },
        types: {
          EIP712Domain: [
            { name: 'name', type: 'string' },
            { name: 'version', type: 'string' },
            { name: 'chainId', type: 'uint256' },
            { name: 'verifyingContract', type: 'address' },
          ],
        },
      }),
    );

    const wallet = await orgWallet(gw);
    expect(await client.publicClient.getBalance({ address: wallet })).toBe(parseEther('100'));
    expect(await usdcBalance(client.publicClient, wallet)).toBe(parseUnits('10000', 6));
  });

  it('never returns the RPC URL from an endpoint', async () => {
    const { body } = await fetchJson(`${gw.url}/api/chains?includeDisabled=true`);
    const text = JSON.stringify(body);
    expect(text).toContain('31337');
    expect(text).not.toContain(rpcUrl.replace('http://', ''));
  });

  it('moves USDC with a signed EIP-3009 authorization and refuses a replay', async () => {
    const devnet = gw.gateway.services.devnet!;
    await devnet.fund(payer.address, { usdc: '50' });
    await devnet.fund(relayer.address, { eth: '1' });
    const relayerClient = createWalletClient({ chain: client.chain, transport: http(rpcUrl), account: relayer });

    const now = BigInt(Math.floor(Date.now() / 1000));
    const sign = (nonce: Hex, value: bigint) =>
      payer.signTypedData({
        domain: { name: 'USD Coin', version: '2', chainId: 31337, verifyingContract: TEST_USDC_ADDRESS },
        types: {
          TransferWithAuthorization: [
            { name: 'from', type: 'address' },
            { name: 'to', type: 'address' },
            { name: 'value', type: 'uint256' },
            { name: 'validAfter', type: 'uint256' },
            { name: 'validBefore', type: 'uint256' },
            { name: 'nonce', type: 'bytes32' },
          ],
        },
        primaryType: 'TransferWithAuthorization',
        message: { from: payer.address, to: payee, value, validAfter: now - 600n, validBefore: now + 3600n, nonce },
      });

    // (v, r, s) form, as x402 facilitators send it for EOA signatures.
    const nonce1 = toHex(crypto.getRandomValues(new Uint8Array(32)));
    const signature1 = await sign(nonce1, parseUnits('12.5', 6));
    const { v, r, s } = parseSignature(signature1);
    const args1 = [payer.address, payee, parseUnits('12.5', 6), now - 600n, now + 3600n, nonce1, Number(v), r, s] as const;
    transferHash = await relayerClient.writeContract({ address: TEST_USDC_ADDRESS, abi: testUsdcAbi, functionName: 'transferWithAuthorization', args: args1 });
    expect((await client.publicClient.waitForTransactionReceipt({ hash: transferHash })).status).toBe('success');
    expect(await usdcBalance(client.publicClient, payee)).toBe(parseUnits('12.5', 6));
    expect(await usdcBalance(client.publicClient, payer.address)).toBe(parseUnits('37.5', 6));
    expect(
      await client.publicClient.readContract({
        address: TEST_USDC_ADDRESS,
        abi: testUsdcAbi,
        functionName: 'authorizationState',
        args: [payer.address, nonce1],
      }),
    ).toBe(true);

    // Replaying the same authorization reverts.
    await expect(
      client.publicClient.simulateContract({
        account: relayer,
        address: TEST_USDC_ADDRESS,
        abi: testUsdcAbi,
        functionName: 'transferWithAuthorization',
        args: args1,
      }),
    ).rejects.toThrow('authorization is used or canceled');

    // `bytes signature` form.
    const nonce2 = toHex(crypto.getRandomValues(new Uint8Array(32)));
    const signature2 = await sign(nonce2, parseUnits('2.5', 6));
    const hash2 = await relayerClient.writeContract({
      address: TEST_USDC_ADDRESS,
      abi: testUsdcAbi,
      functionName: 'transferWithAuthorization',
      args: [payer.address, payee, parseUnits('2.5', 6), now - 600n, now + 3600n, nonce2, signature2],
    });
    expect((await client.publicClient.waitForTransactionReceipt({ hash: hash2 })).status).toBe('success');
    expect(await usdcBalance(client.publicClient, payee)).toBe(parseUnits('15', 6));

    // A signature over a different amount is refused.
    const nonce3 = toHex(crypto.getRandomValues(new Uint8Array(32)));
    const signature3 = await sign(nonce3, parseUnits('1', 6));
    await expect(
      client.publicClient.simulateContract({
        account: relayer,
        address: TEST_USDC_ADDRESS,
        abi: testUsdcAbi,
        functionName: 'transferWithAuthorization',
        args: [payer.address, payee, parseUnits('30', 6), now - 600n, now + 3600n, nonce3, signature3],
      }),
    ).rejects.toThrow('invalid signature');
  });

  it('funds with exact amounts and rejects bad input', async () => {
    const devnet = gw.gateway.services.devnet!;
    const before = await devnet.balances(DEAD);
    const after = await devnet.fund(DEAD.toLowerCase(), { eth: '0.000000000000000001', usdc: '0.000001' });
    expect(parseEther(after.eth) - parseEther(before.eth)).toBe(1n);
    expect(parseUnits(after.usdc, 6) - parseUnits(before.usdc, 6)).toBe(1n);
    await expect(devnet.fund('0x000000000000000000000000000000000000DEAd', { eth: '1' })).rejects.toThrow(
      'Invalid address: 0x000000000000000000000000000000000000DEAd',
    );
    for (const bad of ['-1', '1e3', '', '1.0000001', ' ', '0x10']) await expect(devnet.fund(DEAD, { usdc: bad })).rejects.toThrow('Invalid USDC amount');
    await expect(devnet.fund(DEAD, { eth: '1.', usdc: '1' })).rejects.toThrow('Invalid ETH amount');
    expect(await devnet.balances(DEAD)).toEqual(after); // nothing moved on refused input
  });

  it('`flowgate devnet fund` tops up an address on the running devnet and names a bad one', async () => {
    const target = privateKeyToAccount(generatePrivateKey()).address;
    const ok = await cli(['devnet', 'fund', target, '--eth', '3', '--usdc', '7.25'], { FLOWGATE_DATA_DIR: dataDir });
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain(`Funded ${target}`);
    expect(await client.publicClient.getBalance({ address: target })).toBe(parseEther('3'));
    expect(await usdcBalance(client.publicClient, target)).toBe(parseUnits('7.25', 6));

    const bad = await cli(['devnet', 'fund', '0x1234', '--eth', '1'], { FLOWGATE_DATA_DIR: dataDir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('Invalid address: 0x1234');

    const none = await cli(['devnet', 'fund', target], { FLOWGATE_DATA_DIR: tempDir() });
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain('no devnet is running');
  }, 120_000);

  it('stops anvil on close and keeps balances and receipts across a restart without redeploying', async () => {
    const wallet = await orgWallet(gw);
    const payeeBalance = await usdcBalance(client.publicClient, payee);
    const deployerNonce = await client.publicClient.getTransactionCount({ address: testUsdcDeployer.address });

    await gw.close();
    expect(await answers(rpcUrl)).toBe(false);
    expect(readRunningDevnetUrl(dataDir)).toBeUndefined();
    expect(fs.existsSync(path.join(dataDir, 'devnet', 'state.json'))).toBe(true);

    gw = await startTestGateway({ dataDir, env: { FLOWGATE_DEVNET: 'auto' } });
    rpcUrl = gw.gateway.services.config.rpcUrls[31337]!;
    client = clientsFor(rpcUrl);
    expect(await usdcBalance(client.publicClient, payee)).toBe(payeeBalance);
    expect(await usdcBalance(client.publicClient, wallet)).toBe(parseUnits('10000', 6));
    expect((await client.publicClient.getTransactionReceipt({ hash: transferHash })).status).toBe('success');
    // Same deployer nonce: the token was found, not deployed again (and no mint for the already-funded wallet).
    expect(await client.publicClient.getTransactionCount({ address: testUsdcDeployer.address })).toBe(deployerNonce);
  });
});

describe('FLOWGATE_RPC_URL_31337', () => {
  let chain: TestChain;
  let gw: TestGateway | undefined;
  beforeAll(async () => {
    chain = await startTestChain();
  });
  afterAll(async () => {
    await gw?.close();
    await chain?.stop();
  });

  it('uses the given node: deploys the test USDC there, funds the wallet, spawns no anvil', async () => {
    const dataDir = tempDir();
    gw = await startTestGateway({ dataDir, env: { FLOWGATE_DEVNET: 'auto', FLOWGATE_RPC_URL_31337: chain.url } });
    expect(gw.gateway.services.config.rpcUrls[31337]).toBe(chain.url);
    expect(fs.existsSync(path.join(dataDir, 'devnet'))).toBe(false); // no state, no advertised URL: nothing spawned
    expect(await chain.publicClient.getCode({ address: TEST_USDC_ADDRESS })).toMatch(/^0x[0-9a-f]{100,}/);
    const wallet = await orgWallet(gw);
    expect(await chain.publicClient.getBalance({ address: wallet })).toBe(parseEther('100'));

    // The CLI uses the same node through the variable.
    const target = privateKeyToAccount(generatePrivateKey()).address;
    const result = await cli(['devnet', 'fund', target, '--usdc', '1'], { FLOWGATE_DATA_DIR: dataDir, FLOWGATE_RPC_URL_31337: chain.url });
    expect(result.code).toBe(0);
    expect(await usdcBalance(clientsFor(chain.url).publicClient, target)).toBe(parseUnits('1', 6));

    await gw.close();
    gw = undefined;
    expect(await answers(chain.url)).toBe(true); // not ours to stop
  }, 120_000);

  it('FLOWGATE_DEVNET=off leaves services.devnet null', async () => {
    const off = await startTestGateway({ env: { FLOWGATE_RPC_URL_31337: chain.url } });
    try {
      expect(off.gateway.services.devnet).toBeNull();
      expect(off.gateway.services.stablecoins.lookup(31337, TEST_USDC_ADDRESS)).toBeUndefined();
    } finally {
      await off.close();
    }
  });
});
