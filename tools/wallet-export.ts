import { z } from 'zod';
import { requireStepUp, stepUpProofFields } from '../src/auth/step-up.ts';
import { ServiceError } from '../src/errors.ts';
import { recordAudit } from '../src/org/audit-log.ts';
import { requireRole } from '../src/org/roles.ts';
import { exportWalletKeys } from '../src/wallets/wallets.ts';
import { defineTool } from './define.ts';
import { requirePrincipal } from './authorize.ts';

/**
 * Private-key export of the organization wallet (issue "Identity and
 * access" item 6): owners only, in a session, behind step-up `wallet_export`.
 * The one answer of the gateway that carries a private key, by design.
 */

const exportWallet = defineTool({
  name: 'export_wallet_keys',
  title: 'Export the organization wallet keys',
  description: [
    "Returns the organization wallet's private keys (EVM hex key; Solana secret key as the 64-byte array of a Solana CLI keypair file). Owners only, session only.",
    'Step-up `wallet_export`: the first call answers 401 signature_required with a `challenge`; personal_sign it and repeat with `signature`. Whoever holds these keys controls the funds.',
  ].join(' '),
  scope: 'session',
  input: z.object({ ...stepUpProofFields }),
  output: z.object({
    walletAddress: z.string(),
    privateKey: z.string().describe('EVM private key, 0x-prefixed hex'),
    solanaAddress: z.string(),
    solanaSecretKey: z.array(z.number().int()).describe('Solana secret key, 64 bytes (the Solana CLI keypair-file format)'),
  }),
  rest: { method: 'POST', path: '/api/organization/wallet/export' },
  mcp: false,
  async handler(input, ctx) {
    const principal = requirePrincipal(ctx);
    const { services } = ctx;
    await requireRole(services.store, principal, 'owner');
    await requireStepUp(services, principal, 'wallet_export', input, ctx.ip);
    const keys = await exportWalletKeys(services.store, services.secrets, principal.organizationId);
    if (!keys) throw new ServiceError(409, 'wallet_missing', 'This organization has no wallet yet; it is created with the organization.');
    await recordAudit(services.store, {
      organizationId: principal.organizationId,
      actor: principal,
      action: 'wallet_exported',
      target: keys.walletAddress,
      ip: ctx.ip,
      details: { solanaAddress: keys.solanaAddress },
    });
    ctx.setHeader('Cache-Control', 'no-store');
    return keys;
  },
});

export const walletExportTools = [exportWallet];
