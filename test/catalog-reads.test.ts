import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { maxUint256, parseEther, type Address } from 'viem';
import { wrapFetchWithPayment } from '@x402/fetch';
import { x402Client } from '@x402/core/client';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { testUsdcAbi } from '../src/chains/devnet/test-usdc.ts';
import { startTestChain, type TestChain } from './helpers/anvil.ts';
import { startTestGateway, type TestGateway } from './helpers/gateway.ts';
import { fixtures, place, type Placed } from './helpers/catalog-fixtures.ts';
import { randomAddress } from './helpers/web3.ts';

/**
 * Catalog workflows that read real protocols, end to end: an anvil per chain
 * (ids 1 and 8453) with fixture contracts at the addresses the catalog files
 * name, the listing called over REST, and the documented result fields
 * checked against values derived from the fixture state. Paid listings are
 * paid for with @x402/fetch on the devnet (31337), as the payments tests do.
 */

const UPDATED_AT = 1_700_000_000n;
const UPDATED_ISO = '2023-11-14T22:13:20.000Z';
const RAY_PERCENT = 10n ** 25n; // 1% APR in Aave's ray units

const ETH = {
  usdc: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
  weth: '0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2',
  wsteth: '0x7f39C581F595B53c5cb19bD0b3f8dA6c935E2Ca0',
  pool: '0x87870Bca3F3fD6335C3F4ce8392D69350B4fA4E2',
  quoter: '0x61fFE014bA17989E743c5F6cB21bF9697530B21e',
  feeds: {
    usdc: '0x8fFfFfd4AfB6115b954Bd326cbe7B4BA576818f6',
    btc: '0xF4030086522a5bEEa4988F8cA5B36dbC97BeE88c',
    eth: '0x5f4eC3Df9cbd43714FE2740f5E3616155c5b8419',
    link: '0x2c1d072e956AFFC0D435Cb7AC38EF18d24d9127c',
    dai: '0xAed0c38402a5d19df6E4c03F4E2DceD6e29c1ee9',
  },
  spenders: {
    uniV2: '0x7a250d5630B4cF539739dF2C5dAcb4c659F2488D',
    universal: '0x3fC91A3afd70395Cd496C647d5a6CC9D4B2b7FAD',
    permit2: '0x000000000022D473030F116dDEE9F6B43aC78BA3',
  },
} as const;

const BASE = {
  usdc: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
  weth: '0x4200000000000000000000000000000000000006',
  pool: '0xA238Dd80C259a72e81d7e4664a9801593F98d1c5',
  comet: '0xb125E6687d4313864e53df431d5425969c15Eb2F',
  quoter: '0x3d4e44Eb1374240CE5F1B871ab261CD16335B76a',
} as const;

let devnet: TestChain;
let mainnet: TestChain;
let base: TestChain;
let gw: TestGateway;
let usdcDevnet: Address;
const eth: Record<string, Placed> = {};
const b: Record<string, Placed> = {};

beforeAll(async () => {
  [devnet, mainnet, base] = await Promise.all([startTestChain(31337), startTestChain(1), startTestChain(8453)]);
  gw = await startTestGateway({
    env: {
      FLOWGATE_DEVNET: 'auto',
      FLOWGATE_RPC_URL_31337: devnet.url,
      FLOWGATE_RPC_URL_1: mainnet.url,
      FLOWGATE_RPC_URL_8453: base.url,
      FLOWGATE_RATE_LIMITS: 'off',
    },
  });
  usdcDevnet = gw.gateway.services.devnet!.usdcAddress;

  for (const [coin, address] of Object.entries(ETH.feeds)) eth[`feed:${coin}`] = await place(mainnet, fixtures.chainlinkFeed, address);
  eth.usdc = await place(mainnet, fixtures.erc20, ETH.usdc);
  eth.pool = await place(mainnet, fixtures.aavePool, ETH.pool);
  eth.quoter = await place(mainnet, fixtures.quoterV2, ETH.quoter);
  b.usdc = await place(base, fixtures.erc20, BASE.usdc);
  b.weth = await place(base, fixtures.erc20, BASE.weth);
  b.pool = await place(base, fixtures.aavePool, BASE.pool);
  b.comet = await place(base, fixtures.comet, BASE.comet);
  b.quoter = await place(base, fixtures.quoterV2, BASE.quoter);
}, 120_000);

afterAll(async () => {
  await gw?.close();
  await Promise.all([devnet?.stop(), mainnet?.stop(), base?.stop()]);
});

const url = (slug: string) => `${gw.url}/api/mcp/workflows/${slug}/call`;
const post = (body: unknown) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const devnetUsdc = (owner: Address) =>
  devnet.publicClient.readContract({ address: usdcDevnet, abi: testUsdcAbi, functionName: 'balanceOf', args: [owner] }) as Promise<bigint>;

async function callFree(slug: string, body: unknown) {
  const res = await fetch(url(slug), post(body));
  const json = (await res.json()) as any;
  expect(res.status, JSON.stringify(json)).toBe(200);
  expect(json.status, JSON.stringify(json)).toBe('success');
  return json.output.result;
}

async function payer(): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(generatePrivateKey());
  await gw.gateway.services.devnet!.fund(account.address, { usdc: '100' });
  return account;
}

/** Pays with @x402/fetch on the devnet and checks the payer was charged exactly the listed price. */
async function callPaid(slug: string, body: unknown, priceAtomic: bigint) {
  const account = await payer();
  const client = new x402Client().register('eip155:*', new ExactEvmScheme(account));
  client.setSpendControls({ allowedAssets: [{ network: 'eip155:31337', asset: usdcDevnet, maxAmountPerPayment: '10000000' }] });
  const before = await devnetUsdc(account.address);
  const res = await wrapFetchWithPayment(fetch, client)(url(slug), post(body));
  const json = (await res.json()) as any;
  expect(res.status, JSON.stringify(json)).toBe(200);
  expect(json.status, JSON.stringify(json)).toBe('success');
  expect(before - (await devnetUsdc(account.address))).toBe(priceAtomic);
  return json.output.result;
}

describe('Chainlink feeds (Ethereum)', () => {
  test('stablecoin-price-check reports the USDC/USD round, its deviation and the depeg flag', async () => {
    await eth['feed:usdc']!.set('setRound', [8, 99_850_000n, UPDATED_AT]);
    expect(await callFree('stablecoin-price-check', { stablecoin: 'USDC' })).toEqual({
      stablecoin: 'USDC',
      price: 0.9985,
      priceRaw: '99850000',
      decimals: 8,
      deviationBps: 15,
      depegged: false,
      updatedAt: UPDATED_ISO,
      source: 'chainlink:USDC/USD',
    });
    await eth['feed:usdc']!.set('setRound', [8, 98_000_000n, UPDATED_AT]);
    expect(await callFree('stablecoin-price-check', { stablecoin: 'usdc' })).toMatchObject({ price: 0.98, deviationBps: 200, depegged: true });
  });

  test('price-decimals returns the exact decimal string of the chosen feed', async () => {
    await eth['feed:btc']!.set('setRound', [8, 6_543_210_987_654n, UPDATED_AT]);
    await eth['feed:dai']!.set('setRound', [8, 99_990_000n, UPDATED_AT]);
    expect(await callFree('price-decimals', { coin: 'btc' })).toEqual({
      coin: 'btc',
      pair: 'BTC/USD',
      price: '65432.10987654',
      priceRaw: '6543210987654',
      decimals: 8,
      feed: ETH.feeds.btc,
    });
    expect(await callFree('price-decimals', { coin: 'dai' })).toEqual({
      coin: 'dai',
      pair: 'DAI/USD',
      price: '0.99990000',
      priceRaw: '99990000',
      decimals: 8,
      feed: ETH.feeds.dai,
    });
  });

  test('usdc-eth-price-alert-workflow (paid, $10) compares ETH/USD with the threshold', async () => {
    await eth['feed:eth']!.set('setRound', [8, 345_012_000_000n, UPDATED_AT]);
    expect(await callPaid('usdc-eth-price-alert-workflow', { price: '3000' }, 10_000_000n)).toEqual({
      pair: 'ETH/USD',
      ethUsd: 3450.12,
      usdcEth: 1 / 3450.12,
      threshold: 3000,
      triggered: true,
      direction: 'above',
      updatedAt: UPDATED_ISO,
    });
    expect(await callPaid('usdc-eth-price-alert-workflow', { price: '3500.5' }, 10_000_000n)).toMatchObject({
      ethUsd: 3450.12,
      threshold: 3500.5,
      triggered: false,
      direction: 'below',
    });
    // price is optional: without it there is no threshold and nothing triggers.
    expect(await callPaid('usdc-eth-price-alert-workflow', {}, 10_000_000n)).toMatchObject({
      ethUsd: 3450.12,
      threshold: null,
      triggered: false,
      direction: null,
    });
  });
});

describe('ERC-20 reads (Ethereum)', () => {
  test('token-safety-check reads the metadata and rates a sane token low', async () => {
    await eth.usdc!.set('setMetadata', ['USD Coin', 'USDC', 6, 25_000_000_000_000_000n]);
    expect(await callFree('token-safety-check', { tokenAddress: ETH.usdc })).toEqual({
      tokenAddress: ETH.usdc,
      name: 'USD Coin',
      symbol: 'USDC',
      decimals: 6,
      totalSupply: '25000000000000000',
      isErc20: true,
      riskLevel: 'low',
      warnings: [],
    });
  });

  test('token-safety-check warns about unusual decimals and a zero supply', async () => {
    const odd = await place(mainnet, fixtures.erc20, randomAddress());
    await odd.set('setMetadata', ['Odd', 'ODD', 77, 0n]);
    expect(await callFree('token-safety-check', { tokenAddress: odd.address })).toEqual({
      tokenAddress: odd.address,
      name: 'Odd',
      symbol: 'ODD',
      decimals: 77,
      totalSupply: '0',
      isErc20: false,
      riskLevel: 'high',
      warnings: ['unusual decimals', 'zero total supply'],
    });
  });

  test('token-safety-check on an address without code fails the run naming the read that returned nothing', async () => {
    const res = await fetch(url('token-safety-check'), post({ tokenAddress: randomAddress() }));
    const json = (await res.json()) as any;
    expect(json).toMatchObject({ status: 'error', output: { result: null } });
    expect(json.error).toMatch(/Token Name.*"name" returned no data/);
  });

  test('token-approval-risk-scanner-ethereum (paid) flags the unlimited and the bounded USDC approvals', async () => {
    const wallet = randomAddress();
    await eth.usdc!.set('setAllowance', [wallet, ETH.spenders.uniV2, maxUint256]);
    await eth.usdc!.set('setAllowance', [wallet, ETH.spenders.permit2, 1_000_000_000n]);
    const result = await callPaid('token-approval-risk-scanner-ethereum', { wallet }, 50_000n);
    expect(result).toEqual({
      wallet,
      approvals: [
        { token: 'USDC', spender: ETH.spenders.uniV2, spenderName: 'Uniswap V2 Router', allowanceRaw: maxUint256.toString(), unlimited: true, risk: 'high' },
        { token: 'USDC', spender: ETH.spenders.universal, spenderName: 'Uniswap Universal Router', allowanceRaw: '0', unlimited: false, risk: 'none' },
        { token: 'USDC', spender: ETH.spenders.permit2, spenderName: 'Permit2', allowanceRaw: '1000000000', unlimited: false, risk: 'medium' },
        { token: 'USDC', spender: ETH.pool, spenderName: 'Aave V3 Pool', allowanceRaw: '0', unlimited: false, risk: 'none' },
      ],
      riskyCount: 2,
      riskLevel: 'high',
    });
  });
});

describe('Aave positions', () => {
  test('defi-position-aggregator-base reports health, collateral, debt and risk of a position with debt', async () => {
    const wallet = randomAddress();
    await b.pool!.set('setPosition', [wallet, 10_000n * 10n ** 8n, 5_000n * 10n ** 8n]); // HF 1.65
    await base.setBalance(wallet, '1.5');
    await b.usdc!.set('setBalance', [wallet, 1_234_560_000n]);
    expect(await callFree('defi-position-aggregator-base', { wallet })).toEqual({
      wallet,
      healthFactor: 1.65,
      totalCollateralUSD: 10000,
      totalDebtUSD: 5000,
      availableBorrowsUSD: 2500,
      riskLevel: 'medium',
      nativeBalance: parseEther('1.5').toString(),
      usdcBalanceRaw: '1234560000',
    });
  });

  test('defi-position-aggregator-base rates the risk by health factor', async () => {
    const cases: [bigint, number, string][] = [
      [3_000n, 2.75, 'low'], // 10,000 × 0.825 / 3,000
      [6_000n, 1.375, 'high'],
      [7_800n, 1.057692, 'critical'], // 1.0576923… truncated to 6 decimals
    ];
    for (const [debt, healthFactor, riskLevel] of cases) {
      const wallet = randomAddress();
      await b.pool!.set('setPosition', [wallet, 10_000n * 10n ** 8n, debt * 10n ** 8n]);
      expect(await callFree('defi-position-aggregator-base', { wallet }), `debt ${debt}`).toMatchObject({
        healthFactor,
        totalDebtUSD: Number(debt),
        riskLevel,
      });
    }
  });

  test('defi-position-aggregator-ethereum: no debt means no health factor and risk none', async () => {
    const wallet = randomAddress();
    await eth.pool!.set('setPosition', [wallet, 2_500n * 10n ** 8n, 0n]);
    expect(await callFree('defi-position-aggregator-ethereum', { wallet })).toEqual({
      wallet,
      healthFactor: null,
      totalCollateralUSD: 2500,
      totalDebtUSD: 0,
      availableBorrowsUSD: 1875,
      riskLevel: 'none',
      nativeBalance: '0',
      usdcBalanceRaw: '0',
    });
  });
});

describe('paid Base reads', () => {
  test('wallet-snapshot-base lists native, USDC and WETH balances', async () => {
    const wallet = randomAddress();
    await base.setBalance(wallet, '0.25');
    await b.usdc!.set('setBalance', [wallet, 42_000_000n]);
    await b.weth!.set('setBalance', [wallet, parseEther('3')]);
    const result = await callPaid('wallet-snapshot-base', { wallet }, 10_000n);
    expect(result).toEqual({
      wallet,
      chainId: 8453,
      nativeBalance: parseEther('0.25').toString(),
      tokens: [
        { symbol: 'USDC', address: BASE.usdc, decimals: 6, balanceRaw: '42000000' },
        { symbol: 'WETH', address: BASE.weth, decimals: 18, balanceRaw: parseEther('3').toString() },
      ],
      takenAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    });
  });

  test('stablecoin-yield-compare-base compares Aave and Compound USDC supply rates', async () => {
    await b.pool!.set('setReserve', [BASE.usdc, (45n * RAY_PERCENT) / 10n, 6n * RAY_PERCENT, Number(UPDATED_AT)]); // 4.5% supply
    await b.comet!.set('setRates', [800_000_000_000_000_000n, 1_648_909_200n]); // 5.2% APR per second
    expect(await callPaid('stablecoin-yield-compare-base', {}, 50_000n)).toEqual({
      rates: [
        { protocol: 'aave-v3', asset: 'USDC', apr: 4.5 },
        { protocol: 'compound-v3', asset: 'USDC', apr: 5.2 },
      ],
      bestRate: 5.2,
      bestProtocol: 'compound-v3',
      unit: 'percent APR',
      chainId: 8453,
    });
  });

  test('mev-aware-swap-quote-base picks the better fee tier and a 50 bps floor', async () => {
    await b.quoter!.set('setPool', [BASE.usdc, BASE.weth, 500, 289_855_072_463n, 95_000n]);
    await b.quoter!.set('setPool', [BASE.usdc, BASE.weth, 3000, 289_000_000_000n, 110_000n]);
    const result = await callPaid('mev-aware-swap-quote-base', { sell_token: BASE.usdc, buy_token: BASE.weth, sell_amount_raw: '1000000000' }, 50_000n);
    expect(result).toMatchObject({
      chainId: 8453,
      sellToken: BASE.usdc,
      buyToken: BASE.weth,
      sellAmountRaw: '1000000000',
      from: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
      quotes: [
        { feeTier: 500, amountOutRaw: '289855072463000', gasEstimate: '95000' },
        { feeTier: 3000, amountOutRaw: '289000000000000', gasEstimate: '110000' },
      ],
      bestFeeTier: 500,
      buyAmountRaw: '289855072463000',
      minBuyAmountRaw: '288405797100685',
      slippageBps: 50,
      source: 'uniswap-v3:QuoterV2',
    });
  });
});

describe('paid Ethereum reads', () => {
  test('yield-curve-snapshot-ethereum-{usdc,weth,wsteth} report each reserve’s rates', async () => {
    const cases = [
      { slug: 'yield-curve-snapshot-ethereum-usdc', asset: 'USDC', address: ETH.usdc, supply: 5n, borrow: 7n },
      { slug: 'yield-curve-snapshot-ethereum-weth', asset: 'WETH', address: ETH.weth, supply: 2n, borrow: 3n },
      { slug: 'yield-curve-snapshot-ethereum-wsteth', asset: 'wstETH', address: ETH.wsteth, supply: 1n, borrow: 4n },
    ];
    for (const c of cases) {
      await eth.pool!.set('setReserve', [c.address, c.supply * RAY_PERCENT, c.borrow * RAY_PERCENT, Number(UPDATED_AT)]);
      expect(await callPaid(c.slug, {}, 50_000n), c.slug).toEqual({
        asset: c.asset,
        assetAddress: c.address,
        protocol: 'aave-v3',
        supplyApr: Number(c.supply),
        variableBorrowApr: Number(c.borrow),
        unit: 'percent APR',
        lastUpdate: UPDATED_ISO,
        chainId: 1,
      });
    }
  });

  test('mev-aware-swap-quote-ethereum quotes both fee tiers', async () => {
    await eth.quoter!.set('setPool', [ETH.weth, ETH.usdc, 500, 3_450_000_000n, 80_000n]);
    await eth.quoter!.set('setPool', [ETH.weth, ETH.usdc, 3000, 3_460_000_000n, 90_000n]);
    const result = await callPaid(
      'mev-aware-swap-quote-ethereum',
      { sell_token: ETH.weth, buy_token: ETH.usdc, sell_amount_raw: '1000000', chain: 'ethereum' },
      50_000n,
    );
    expect(result).toMatchObject({
      chainId: 1,
      quotes: [
        { feeTier: 500, amountOutRaw: '3450000000', gasEstimate: '80000' },
        { feeTier: 3000, amountOutRaw: '3460000000', gasEstimate: '90000' },
      ],
      bestFeeTier: 3000,
      buyAmountRaw: '3460000000',
      minBuyAmountRaw: '3442700000',
    });
  });
});

describe('optional inputs left out', () => {
  // A template naming an input the caller left out fails its step; these listings read optional
  // inputs off the whole trigger output instead, so leaving them out is not a failed (paid) run.
  test('simple-workflow (free) and buy-me-a-coffee (paid, $3) run without their optional fields', async () => {
    expect(await callFree('simple-workflow', {})).toEqual({ txid: null, amount: null, received: true });
    expect(await callFree('simple-workflow', { txid: '0xabc', amount: 1.5 })).toEqual({ txid: '0xabc', amount: 1.5, received: true });
    expect(await callPaid('buy-me-a-coffee', {}, 3_000_000n)).toEqual({ thanks: true, message: null, coffee: 'one coffee, gratefully received' });
    expect(await callPaid('buy-me-a-coffee', { message: 'gm' }, 3_000_000n)).toMatchObject({ message: 'gm' });
  });
});
