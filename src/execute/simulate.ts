import { orRpcUnavailable } from '../chains/rpc-errors.ts';
import { simulateTransaction } from '../chains/transactions.ts';
import { ServiceError } from '../errors.ts';
import { simulatedCapRefusal } from '../guards/spend-cap.ts';
import { stablecoinLimitViolation } from '../guards/stablecoin-limit.ts';
import type { PreparedWrite } from '../onchain/prepared-write.ts';
import type { Services } from '../services.ts';
import { organizationAccount } from '../wallets/signer.ts';
import type { DirectCaller, DirectResponse } from './caller.ts';

/** The simulation response (SPEC "Simulation response"); reserves nothing. */
export async function simulate(services: Services, caller: DirectCaller, write: PreparedWrite): Promise<DirectResponse> {
  const account = await organizationAccount(services.store, services.secrets, caller.organizationId);
  const client = services.chainClients.publicClient(write.chain.chainId);
  const sim = await orRpcUnavailable(write.chain, () => simulateTransaction(client, account.address, write.request, write.abi), 'nothing was simulated');
  const body: Record<string, unknown> = {
    success: !sim.wouldRevert,
    status: 'simulated',
    from: account.address,
    to: write.request.to,
    value: write.request.value.toString(),
    gasEstimate: sim.gasEstimate.toString(),
    wouldRevert: sim.wouldRevert,
    ...(sim.reason ? { reason: sim.reason } : {}),
  };
  // Limits that would refuse the real call are reported too, with the limit.
  const stablecoin = stablecoinLimitViolation(services.stablecoins, services.config.spend.stablecoinCapMicroUsd, {
    chainId: write.chain.chainId,
    ...write.request,
  });
  const refuse = (reason: string, limit: Record<string, string | number>) => Object.assign(body, { success: false, reason: body.reason ?? reason, ...limit });
  if (stablecoin) refuse(stablecoin, { stablecoinLimitMicroUsd: services.config.spend.stablecoinCapMicroUsd.toString() });
  if (write.request.value > 0n) {
    const cap = await simulatedCapRefusal(services.store, services.config, {
      organizationId: caller.organizationId,
      amount: write.request.value,
      chainId: write.chain.chainId,
    });
    if (cap) refuse('Daily spending cap exceeded', cap);
  }
  if (sim.wouldRevert && write.type === 'transfer') {
    throw new ServiceError(400, 'simulation_failed', `Simulation failed: the transfer would revert (${sim.reason}).`, body);
  }
  return { status: 200, body };
}
