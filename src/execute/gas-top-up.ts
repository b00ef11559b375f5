import { formatEther, parseEther } from 'viem';
import { DEVNET_CHAIN_ID } from '../chains/devnet/test-usdc.ts';
import { badRequest, ServiceError } from '../errors.ts';
import type { Services } from '../services.ts';
import { parseAmount } from '../onchain/money-inputs.ts';

/**
 * POST /api/execute/gas-top-up: adds native token for gas to the organization
 * wallet from a configured funding source. The only source today is the
 * devnet (anvil's prefunded balance, via services.devnet.fund on chain 31337);
 * without one the caller is told how to fund the wallet by hand.
 */

export const GAS_TOP_UP_DEFAULT = '1';
export const GAS_TOP_UP_MAX = '10';

export interface GasTopUpResult {
  success: true;
  chainId: number;
  walletAddress: string;
  /** Ether added, decimal string. */
  amount: string;
  amountWei: string;
  /** Wallet balance after the top-up, ether decimal string. */
  balance: string;
}

export async function gasTopUp(
  services: Services,
  organizationId: string,
  input: { amount?: string | number; chainId?: string | number },
): Promise<GasTopUpResult> {
  const wei = parseAmount(input.amount ?? GAS_TOP_UP_DEFAULT, 18, 'amount');
  if (wei === 0n) throw badRequest('invalid_amount', 'amount must be greater than 0 (ether, e.g. "1").', { field: 'amount' });
  if (wei > parseEther(GAS_TOP_UP_MAX))
    throw badRequest('invalid_amount', `amount ${String(input.amount)} is above the ${GAS_TOP_UP_MAX} ETH per top-up maximum.`, {
      field: 'amount',
      max: GAS_TOP_UP_MAX,
    });

  const wallet = (await services.organizations.wallet(organizationId))?.walletAddress;
  if (!wallet) throw new ServiceError(409, 'wallet_missing', 'This organization has no wallet yet; it is created with the organization.');
  const requested = input.chainId === undefined || input.chainId === '' ? DEVNET_CHAIN_ID : Number(input.chainId);
  const devnet = services.devnet;
  if (!devnet || requested !== devnet.chainId) {
    const where = devnet ? `chain ${input.chainId}` : 'this gateway';
    throw new ServiceError(
      409,
      'gas_top_up_unavailable',
      `No gas funding source is configured for ${where}: top-ups come from the embedded devnet (chain ${DEVNET_CHAIN_ID}, FLOWGATE_DEVNET=auto). Fund the organization wallet ${wallet} by sending native token to it from a wallet you control (GET /api/user/wallet shows the address).`,
      {
        walletAddress: wallet,
      },
    );
  }
  const amount = formatEther(wei);
  const after = await devnet.fund(wallet, { eth: amount });
  return { success: true, chainId: devnet.chainId, walletAddress: wallet, amount, amountWei: wei.toString(), balance: after.eth };
}
