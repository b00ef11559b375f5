/**
 * The callers of bench/payments.ts, run as their own process (as paying
 * agents are), so their signing and HTTP work never shares the gateway's
 * event loop or its CPU: one loop per payer account, each calling the free
 * workflow, paying for the paid one (x402 or MPP), or sending one raw viem
 * transaction (the anchor).
 *
 * Protocol: argv[2] is a JSON CallerSpec. With `probe`, every caller makes one
 * call at once and the process sends a ProbeResult. Otherwise each caller
 * makes one warm-up call, the process sends `{ready}` (the parent starts its
 * CPU clock then), runs the timed loop and sends a CallerResult.
 */
import { createPublicClient, createWalletClient, http, type Chain, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { wrapFetchWithPayment } from '@x402/fetch';
import { x402Client } from '@x402/core/client';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { devnetMppx } from '../scripts/devnet-mppx.ts';
import { timedLoop, type Sample } from './devnet-bench.ts';

export type CallerKind = 'raw' | 'free' | 'x402' | 'mpp';

export interface CallerSpec {
  kind: CallerKind;
  /** The gateway's base URL, and the devnet's RPC URL (for the raw anchor). */
  url: string;
  rpcUrl: string;
  usdc: Hex;
  /** One funded payer per concurrent caller. */
  keys: Hex[];
  seconds: number;
  freeSlug: string;
  paidSlug: string;
  probe?: boolean;
  /** The devnet's process, whose CPU per call the parent reads (the callers do not use it). */
  anvilPid?: number;
}

export interface CallerResult extends Sample {
  lastFailure: string;
  /** This process's CPU per call over the timed loop, in ms: what the paying clients spend (signing, HTTP). */
  callersCpuMs: number;
}

export interface ProbeResult {
  refused: number;
  lastFailure: string;
}

function callers(spec: CallerSpec) {
  const callUrl = (slug: string) => `${spec.url}/api/mcp/workflows/${slug}/call`;
  const post = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' };
  const accounts = spec.keys.map((key) => privateKeyToAccount(key));
  let lastFailure = '';

  // A paid sample counts only if it settled a new payment and ran: 200, a settlement header, no replay.
  const paidOk = async (res: Response, settlementHeader: string) => {
    const text = await res.text();
    const body = (res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : {}) as { status?: string; paymentReplay?: boolean };
    const ok = res.status === 200 && body.status === 'success' && !body.paymentReplay && Boolean(res.headers.get(settlementHeader));
    if (!ok) lastFailure = `${res.status} ${text.slice(0, 300)}`;
    return ok;
  };

  const build: Record<CallerKind, () => (caller: number) => Promise<boolean>> = {
    raw: () => {
      // "One devnet transaction": each caller sends a 0-value transfer from its own account and reads its receipt
      // (anvil mines on arrival), as a paid call's settlement does.
      const chain: Chain = {
        id: 31337,
        name: 'anvil',
        nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
        rpcUrls: { default: { http: [spec.rpcUrl] } },
      };
      const reader = createPublicClient({ chain, transport: http(spec.rpcUrl) });
      const wallets = accounts.map((account) => createWalletClient({ account, chain, transport: http(spec.rpcUrl) }));
      return async (caller) => {
        const wallet = wallets[caller]!;
        const hash = await wallet.sendTransaction({ to: wallet.account.address, value: 0n });
        for (;;) {
          const receipt = await reader.getTransactionReceipt({ hash }).catch(() => undefined);
          if (receipt) return receipt.status === 'success';
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      };
    },
    free: () => async () => {
      const res = await fetch(callUrl(spec.freeSlug), post);
      return res.status === 200 && ((await res.json()) as { status: string }).status === 'success';
    },
    x402: () => {
      const fetches = accounts.map((account) => {
        const client = new x402Client().register('eip155:*', new ExactEvmScheme(account));
        client.setSpendControls({ allowedAssets: [{ network: 'eip155:31337', asset: spec.usdc, maxAmountPerPayment: '10000000' }] });
        return wrapFetchWithPayment(fetch, client);
      });
      return async (caller) => paidOk(await fetches[caller]!(callUrl(spec.paidSlug), post), 'payment-response');
    },
    mpp: () => {
      const clients = accounts.map((account) => devnetMppx(account, spec.usdc));
      return async (caller) => paidOk(await clients[caller]!.fetch(callUrl(spec.paidSlug), post), 'payment-receipt');
    },
  };
  return { iteration: build[spec.kind](), lastFailure: () => lastFailure };
}

const spec = JSON.parse(process.argv[2]!) as CallerSpec;
const { iteration, lastFailure } = callers(spec);
const send = (message: unknown) => new Promise<void>((resolve) => process.send!(message, () => resolve()));

if (spec.probe) {
  const outcomes = await Promise.all(spec.keys.map((_, caller) => iteration(caller).catch(() => false)));
  await send({ refused: outcomes.filter((ok) => !ok).length, lastFailure: lastFailure() } satisfies ProbeResult);
} else {
  // Warm-up: one call from every loop (JIT, first settlement per payer).
  for (let caller = 0; caller < spec.keys.length; caller++) {
    if (!(await iteration(caller))) throw new Error(`payments bench: a warm-up ${spec.kind} call failed: ${lastFailure()}`);
  }
  await send({ ready: true });
  const cpuAtStart = process.cpuUsage();
  const sample = await timedLoop(spec.seconds, spec.keys.length, iteration);
  const cpu = process.cpuUsage(cpuAtStart);
  const callersCpuMs = (cpu.user + cpu.system) / 1000 / Math.max(1, sample.perSecond * spec.seconds);
  await send({ ...sample, lastFailure: lastFailure(), callersCpuMs } satisfies CallerResult);
}
process.exit(0);
