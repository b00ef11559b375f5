import { createPublicClient, defineChain, encodeFunctionData, getAddress, isAddress, type Hex } from 'viem';
import type { PaymentPayload, PaymentRequirements, VerifyResponse } from '@x402/core/types';
import { x402Facilitator } from '@x402/core/facilitator';
import { eip3009ABI, toFacilitatorEvmSigner } from '@x402/evm';
import { ExactEvmScheme as ExactEvmFacilitatorScheme } from '@x402/evm/exact/facilitator';
import { rpcTransport } from '../chains/rpc-transport.ts';
import { ecdsaTransferArgs, eip3009 } from './eip3009.ts';

/**
 * x402's own verification of a payment (signature, payee, amount, validity
 * window, and a simulation of the transfer on chain), as the in-process
 * facilitator runs it: in the verifier thread (verifier-thread.ts), or on the
 * gateway's thread when that thread is not up. It reads the chain only and
 * holds no key. Plain data in and out, so both places build it from the same
 * options.
 */

export interface VerificationOptions {
  rpcUrl: string;
  chainId: number;
  network: PaymentRequirements['network'];
  /** The facilitator's gas-paying address (x402 lists it as the facilitator's signer). */
  address: `0x${string}`;
}

export type VerifyPayment = (payload: PaymentPayload, requirements: PaymentRequirements) => Promise<VerifyResponse>;

/** A code read answered for this long: the two reads of the payer's code within one verification become one. */
const CODE_MS = 1_000;
/** How long a simulation started ahead of x402's verification waits to be asked for by it. */
const SIMULATION_AHEAD_MS = 2_000;
/** At most this many simulations started ahead and not yet taken up by x402. */
const AHEAD_MAX = 10_000;

export function createX402Verification(options: VerificationOptions) {
  const chain = defineChain({
    id: options.chainId,
    name: `chain-${options.chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [options.rpcUrl] } },
  });
  // The gateway's keep-alive transport (src/chains/rpc-transport.ts): cheaper per call than viem's batched fetch.
  const client = createPublicClient({ chain, transport: rpcTransport(options.rpcUrl, { retryCount: 1, timeout: 15_000 }) });
  const codes = new Map<string, { at: number; code: ReturnType<typeof client.getCode> }>();
  const getCode: typeof client.getCode = (args) => {
    const key = args.address.toLowerCase();
    const seen = codes.get(key);
    if (seen && Date.now() - seen.at < CODE_MS) return seen.code;
    for (const [k, v] of codes) if (Date.now() - v.at >= CODE_MS) codes.delete(k);
    const code = client.getCode(args);
    codes.set(key, { at: Date.now(), code });
    code.catch(() => codes.get(key)?.code === code && codes.delete(key));
    return code;
  };
  /**
   * x402's verification recovers the signer (secp256k1, 2-3 ms of CPU here) and only then simulates the
   * transfer on chain. verify() starts that same simulation first, so the node works on it during the recovery;
   * x402's read of it is answered by that call (once, and only within SIMULATION_AHEAD_MS). x402 still decides on
   * its result: nothing it checks is skipped. Its first step, a read of the payer's code, is started here too, so
   * that round trip overlaps the simulation's instead of preceding it (answered by the same read, see CODE_MS).
   */
  const simulationsAhead = new Map<string, Promise<unknown>>();
  const simulationKey = (address: string, data: Hex) => `${address.toLowerCase()}:${data}`;
  const readContract: typeof client.readContract = ((args: Parameters<typeof client.readContract>[0]) => {
    if (args.functionName === 'transferWithAuthorization') {
      const key = simulationKey(String(args.address), encodeFunctionData({ abi: args.abi, functionName: args.functionName, args: args.args } as never));
      const ahead = simulationsAhead.get(key);
      if (ahead) {
        simulationsAhead.delete(key);
        return ahead;
      }
    }
    return client.readContract(args);
  }) as typeof client.readContract;
  const simulateAhead = (payload: PaymentPayload, requirements: PaymentRequirements) => {
    const transfer = eip3009(payload);
    if (transfer && isAddress(transfer.authorization.from)) getCode({ address: getAddress(transfer.authorization.from) }).catch(() => {});
    // A smart wallet's (ERC-1271 or ERC-6492) signature is checked another way first: left to x402 as it is.
    const args = transfer && ecdsaTransferArgs(transfer);
    // Bounded: a flood of payments never taken up by x402 cannot grow it without limit.
    if (!args || simulationsAhead.size >= AHEAD_MAX || !isAddress(requirements.asset)) return;
    const asset = getAddress(requirements.asset);
    const key = simulationKey(asset, encodeFunctionData({ abi: eip3009ABI, functionName: 'transferWithAuthorization', args }));
    const simulation = client.readContract({ address: asset, abi: eip3009ABI, functionName: 'transferWithAuthorization', args } as never) as Promise<unknown>;
    simulation.catch(() => {});
    simulationsAhead.set(key, simulation);
    setTimeout(() => simulationsAhead.get(key) === simulation && simulationsAhead.delete(key), SIMULATION_AHEAD_MS).unref();
  };
  const signer = toFacilitatorEvmSigner({ ...client, getCode, readContract, address: options.address } as unknown as Parameters<
    typeof toFacilitatorEvmSigner
  >[0]);
  const x402 = new x402Facilitator().register(options.network, new ExactEvmFacilitatorScheme(signer));
  return {
    verify: ((payload, requirements) => {
      simulateAhead(payload, requirements);
      return x402.verify(payload, requirements);
    }) satisfies VerifyPayment,
    getSupported: () => x402.getSupported(),
  };
}
