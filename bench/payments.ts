/**
 * Pay-per-call overhead on a local anvil devnet: `POST /api/mcp/workflows/{slug}/call`
 * for the free `helloworld` (the baseline) against the paid `microtip` ($0.01,
 * the same kind of work: one `code/run-code` step, no chain read), paid with
 * @x402/fetch and with mppx/client. A paid sample is the whole client-visible
 * call: the unpaid request and its 402, signing, and the retry the gateway
 * verifies, settles on chain (through the in-process facilitator) and runs.
 * Every paid call carries a fresh payment (a reused one would be answered as a
 * replay without settling), and each concurrent loop pays from its own account.
 */
import { pathToFileURL } from 'node:url';
import { createPublicClient, createWalletClient, http, type Chain } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { wrapFetchWithPayment } from '@x402/fetch';
import { x402Client } from '@x402/core/client';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { devnetMppx } from '../scripts/devnet-mppx.ts';
import { startDevnetGateway, timedLoop } from './devnet-bench.ts';

const FREE_SLUG = 'helloworld';
const PAID_SLUG = 'microtip';

export async function benchPayments(seconds: number, connections: number): Promise<void> {
  const { gateway, url, close, node } = await startDevnetGateway();
  const devnetRpc = node.url;
  const devnet = gateway.services.devnet!;
  const usdc = devnet.usdcAddress;
  const callUrl = (slug: string) => `${url}/api/mcp/workflows/${slug}/call`;
  const post = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' };

  // One payer per concurrent loop and protocol, funded well beyond what the run can spend at $0.01 a call.
  const payers = async (): Promise<PrivateKeyAccount[]> => {
    const accounts = Array.from({ length: connections }, () => privateKeyToAccount(generatePrivateKey()));
    for (const account of accounts) await devnet.fund(account.address, { eth: '1', usdc: '100000' });
    return accounts;
  };
  const x402Fetches = (await payers()).map((account) => {
    const client = new x402Client().register('eip155:*', new ExactEvmScheme(account));
    client.setSpendControls({ allowedAssets: [{ network: 'eip155:31337', asset: usdc, maxAmountPerPayment: '10000000' }] });
    return wrapFetchWithPayment(fetch, client);
  });
  const mppFetches = (await payers()).map((account) => {
    const mppx = devnetMppx(account, usdc);
    return (input: string, init?: RequestInit) => mppx.fetch(input, init);
  });

  // A paid sample counts only if it settled a new payment and ran: 200, a settlement header, no replay.
  let lastFailure = '';
  const paidOk = async (res: Response, settlementHeader: string) => {
    const text = await res.text();
    const body = (res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : {}) as { status?: string; paymentReplay?: boolean };
    const ok = res.status === 200 && body.status === 'success' && !body.paymentReplay && Boolean(res.headers.get(settlementHeader));
    if (!ok) lastFailure = `${res.status} ${text.slice(0, 300)}`;
    return ok;
  };
  // The anchor "one devnet transaction": raw viem, each caller sending a 0-value transfer from its own account
  // on the same anvil and reading its receipt (anvil mines on arrival), as a paid call's settlement does.
  const chain: Chain = {
    id: 31337,
    name: 'anvil',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [devnetRpc] } },
  };
  const rawClient = createPublicClient({ chain, transport: http(devnetRpc) });
  const rawWallets = (await payers()).map((account) => createWalletClient({ account, chain, transport: http(devnetRpc) }));
  const rawTx = async (caller: number) => {
    const wallet = rawWallets[caller]!;
    const hash = await wallet.sendTransaction({ to: wallet.account.address, value: 0n });
    for (;;) {
      const receipt = await rawClient.getTransactionReceipt({ hash }).catch(() => undefined);
      if (receipt) return receipt.status === 'success';
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  const free = async () => {
    const res = await fetch(callUrl(FREE_SLUG), post);
    return res.status === 200 && ((await res.json()) as { status: string }).status === 'success';
  };
  const x402 = async (caller: number) => paidOk(await x402Fetches[caller]!(callUrl(PAID_SLUG), post), 'payment-response');
  const mpp = async (caller: number) => paidOk(await mppFetches[caller]!(callUrl(PAID_SLUG), post), 'payment-receipt');

  // Concurrency probe: `connections` paid calls at once per protocol, from distinct payers; every one must settle
  // (the in-process facilitator's settlements all come from one account: they are pipelined with locally counted nonces).
  const probe = async (iteration: (caller: number) => Promise<boolean>) =>
    (await Promise.all(Array.from({ length: connections }, (_, caller) => iteration(caller).catch(() => false)))).filter((ok) => !ok).length;
  const probeFailures = { x402: await probe(x402), mpp: await probe(mpp) };
  // Measured rows run at `paidConnections` (all callers unless BENCH_PAID_CONNECTIONS says otherwise);
  // the free baseline runs at the same concurrency so the p50 ratio compares like with like.
  const paidConnections = Math.min(connections, Number(process.env.BENCH_PAID_CONNECTIONS ?? connections));

  // Warm-up: one call of each kind from every measured loop (JIT, first settlement per payer).
  for (const iteration of [free, x402, mpp, rawTx]) {
    for (let caller = 0; caller < paidConnections; caller++) {
      if (!(await iteration(caller))) throw new Error(`payments bench: a warm-up call failed (${iteration.name}): ${lastFailure}`);
    }
  }

  const rawRow = await timedLoop(seconds, paidConnections, rawTx);
  const freeRow = await timedLoop(seconds, paidConnections, free);
  const x402Row = await timedLoop(seconds, paidConnections, x402);
  const mppRow = await timedLoop(seconds, paidConnections, mpp);

  console.log(
    `\nPay-per-call on a local anvil devnet (${seconds}s per row, ${paidConnections} concurrent caller${paidConnections === 1 ? '' : 's'} per row; ` +
      `one payer account per caller and protocol; ` +
      `free ${FREE_SLUG} vs $0.01 ${PAID_SLUG}, both one code step; a paid sample = 402 + sign + verify + settle on chain + run)\n`,
  );
  console.log(['| call | calls/s | p50 ms | p99 ms | p50 vs free | failures |', '|---|---:|---:|---:|---:|---:|'].join('\n'));
  for (const [name, row] of [
    [`one devnet transaction, raw viem (anchor for paid minus free)`, rawRow],
    [`free: POST /api/mcp/workflows/${FREE_SLUG}/call (baseline)`, freeRow],
    [`paid with x402 (@x402/fetch): ${PAID_SLUG}`, x402Row],
    [`paid with MPP (mppx/client): ${PAID_SLUG}`, mppRow],
  ] as const) {
    console.log(
      `| ${name} | ${row.perSecond.toFixed(1)} | ${row.p50} | ${row.p99} | ${(row.p50 / Math.max(freeRow.p50, 0.1)).toFixed(2)}x | ${row.failures} |`,
    );
  }
  const over = (row: typeof freeRow) => (row.p50 - freeRow.p50).toFixed(1);
  console.log(
    `\nPaid minus free at p50: x402 ${over(x402Row)} ms, MPP ${over(mppRow)} ms; one devnet transaction: ${rawRow.p50} ms (goal: paid minus free ≤ that + 10 ms)`,
  );
  console.log(
    `\nConcurrency probe (${connections} paid calls at once, distinct payers): ${probeFailures.x402}/${connections} x402 and ${probeFailures.mpp}/${connections} MPP calls refused` +
      (lastFailure ? ` (last refusal: ${lastFailure.replace(/\s+/g, ' ').slice(0, 160)})` : ''),
  );

  await close();
}

// `node --import tsx bench/payments.ts` runs this table alone.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchPayments(Number(process.env.BENCH_DURATION ?? 8), Number(process.env.BENCH_CONNECTIONS ?? 10));
  // Something (not yet identified) keeps the event loop alive for minutes after the gateway and anvil are closed.
  process.exit(0);
}
