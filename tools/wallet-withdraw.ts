import { z } from 'zod';
import { requireStepUp, stepUpProofFields } from '../src/auth/step-up.ts';
import { executeWrite } from '../src/execute/write.ts';
import { prepareTransfer } from '../src/onchain/transfer.ts';
import { recordAudit } from '../src/org/audit-log.ts';
import { isServiceError } from '../src/errors.ts';
import { requireRole } from '../src/org/roles.ts';
import { defineTool } from './define.ts';
import { requirePrincipal } from './authorize.ts';
import { respond, writeResponse } from './execute.ts';

/**
 * Withdrawal from the organization wallet (issue "Identity and access" item
 * 6): an owner, in a session, behind step-up `wallet_withdraw`. It is a
 * transfer through the one guarded write path, so the daily caps and the
 * stablecoin limit still apply: step-up adds proof, it lifts no limit.
 */

const withdraw = defineTool({
  name: 'withdraw_from_wallet',
  title: 'Withdraw from the organization wallet',
  description: [
    'Sends native token or an ERC-20 from the organization wallet (owners only, session only) and answers 202 with the direct execution record.',
    'Step-up `wallet_withdraw`: the first call answers 401 signature_required with a `challenge`; personal_sign it and repeat with `signature`.',
    'The daily caps and the stablecoin limit apply as to any transfer. Send Idempotency-Key to make retries safe.',
  ].join(' '),
  scope: 'session',
  input: z.object({
    chainId: z.union([z.string(), z.number()]).describe('EIP-155 chain id, e.g. 8453'),
    recipientAddress: z.string().describe('Recipient: all-lowercase or exact EIP-55 checksum'),
    amount: z.union([z.string(), z.number()]).describe('Human units, e.g. "0.01"'),
    tokenAddress: z.string().optional().describe('ERC-20 to send; omit for the native token'),
    ...stepUpProofFields,
  }),
  output: writeResponse,
  rest: { method: 'POST', path: '/api/organization/wallet/withdraw', status: 202, idempotencyKey: true },
  mcp: false,
  async handler(input, ctx) {
    const principal = requirePrincipal(ctx);
    const { services } = ctx;
    await requireRole(services.store, principal, 'owner');
    const { signature: _s, code: _c, emailOtp: _e, ...transfer } = input;
    // Malformed addresses, amounts and chains are refused before a challenge is minted.
    const { write } = await prepareTransfer(services, transfer);
    await requireStepUp(services, principal, 'wallet_withdraw', input, ctx.ip);
    const caller = { organizationId: principal.organizationId, apiKeyId: principal.keyId, canBroadcast: true, idempotencyKey: ctx.idempotencyKey };
    const audit = (outcome: 'success' | 'failure', details: Record<string, string | number | null>) =>
      recordAudit(services.store, {
        organizationId: principal.organizationId,
        actor: principal,
        action: 'wallet_withdrawal',
        target: transfer.recipientAddress,
        outcome,
        ip: ctx.ip,
        details: { chainId: write.chain.chainId, amount: String(transfer.amount), token: transfer.tokenAddress ?? null, ...details },
      });
    let response;
    try {
      response = await executeWrite(services, caller, 'withdraw', transfer, write, false);
    } catch (error) {
      // A refusal (a cap, an idempotency conflict, an unreachable chain) is audited too, by its code.
      await audit('failure', { code: isServiceError(error) ? error.code : 'internal_error' });
      throw error;
    }
    const body = response.body as { executionId?: string; status?: string };
    await audit(body.status === 'failed' ? 'failure' : 'success', { executionId: body.executionId ?? null, status: body.status ?? null });
    return respond(ctx, response);
  },
});

export const walletWithdrawTools = [withdraw];
