import { z } from 'zod';
import { requireStepUp, stepUpProofFields } from '../src/auth/step-up.ts';
import { spendCapData, spendCapDataSchema } from '../src/guards/spend-cap.ts';
import { applySpendCapChange, checkSpendCapChange } from '../src/org/spend-caps.ts';
import { requireRole } from '../src/org/roles.ts';
import { defineTool } from './define.ts';
import { requirePrincipal } from './authorize.ts';

/** Organization spend caps set by owners behind step-up (issue "Identity and access" item 8); read them with get_spending_limits. */

const amount = (unit: string) =>
  z
    .string()
    .trim()
    .regex(/^\d{1,78}$/, `expected a whole number of ${unit} in decimal digits`)
    .transform((v) => BigInt(v).toString())
    .nullable();

const setSpendCaps = defineTool({
  name: 'set_spend_caps',
  title: 'Set the organization spend caps',
  description: [
    "Sets the organization's daily native-value caps (owners only; session only): `dailyCapWei` for all EVM chains together, `dailySolanaCapLamports`, and `chainCaps` per EVM chain within the EVM cap.",
    'null returns a cap to the deployment default (or removes a chain cap); omitted fields stay. Never above the deployment maximum (400 cap_above_maximum).',
    'Step-up `spend_cap_change`: the first call answers 401 signature_required with a `challenge`; personal_sign it and repeat with `signature`.',
  ].join(' '),
  scope: 'session',
  input: z
    .object({
      dailyCapWei: amount('wei').optional().describe('Daily EVM native-value cap in wei, all EVM chains together; null: the default'),
      dailySolanaCapLamports: amount('lamports').optional().describe('Daily Solana native-value cap in lamports; null: the default'),
      chainCaps: z
        .array(z.object({ chainId: z.number().int().positive(), dailyCapWei: amount('wei').describe('null removes this chain cap') }))
        .max(100)
        .optional()
        .describe('Caps on the value moved per EVM chain per UTC day'),
      ...stepUpProofFields,
    })
    .refine((v) => v.dailyCapWei !== undefined || v.dailySolanaCapLamports !== undefined || v.chainCaps !== undefined, {
      message: 'name at least one of dailyCapWei, dailySolanaCapLamports, chainCaps',
    }),
  output: spendCapDataSchema,
  rest: { method: 'PUT', path: '/api/organization/spend-caps' },
  mcp: false,
  async handler(input, ctx) {
    const principal = requirePrincipal(ctx);
    const { services } = ctx;
    await requireRole(services.store, principal, 'owner');
    checkSpendCapChange(services.config, services.chains, input);
    await requireStepUp(services, principal, 'spend_cap_change', input, ctx.ip);
    await applySpendCapChange(services.store, principal, input, ctx.ip);
    return spendCapData(services.store, services.config, principal.organizationId);
  },
});

export const spendCapTools = [setSpendCaps];
