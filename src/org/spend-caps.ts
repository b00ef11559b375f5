import type { Config } from '../config.ts';
import type { ChainCatalog } from '../chains/catalog.ts';
import type { Principal } from '../auth/principal.ts';
import type { Store } from '../store/db.ts';
import { badRequest, ServiceError } from '../errors.ts';
import { nowIso } from '../ids.ts';
import { recordAudit } from './audit-log.ts';

/**
 * Owners set the organization's daily native-value caps (the spend guard,
 * src/guards/spend-cap.ts, enforces them): EVM organization-wide, Solana, and
 * per EVM chain within the organization-wide one. null returns a cap to the
 * deployment default (or removes a chain's). No value may pass the
 * deployment maximum (FLOWGATE_MAX_DAILY_*), so raising a cap above the
 * default needs the operator's consent.
 */

export interface SpendCapChange {
  dailyCapWei?: string | null;
  dailySolanaCapLamports?: string | null;
  chainCaps?: { chainId: number; dailyCapWei: string | null }[];
}

function aboveMaximum(field: string, value: string, max: bigint, variable: string): ServiceError {
  return new ServiceError(400, 'cap_above_maximum', `${field} ${value} is above this deployment's maximum of ${max}.`, {
    field,
    maximum: max.toString(),
    message: `The operator sets the maximum with ${variable}.`,
  });
}

/** Refuses a change before any step-up is asked for: values over the maximum, unknown or non-EVM chains, a chain named twice. */
export function checkSpendCapChange(config: Config, chains: ChainCatalog, change: SpendCapChange): void {
  const { maxDailyValueCapWei, maxDailySolanaValueCapLamports } = config.spend;
  if (change.dailyCapWei != null && BigInt(change.dailyCapWei) > maxDailyValueCapWei) {
    throw aboveMaximum('dailyCapWei', change.dailyCapWei, maxDailyValueCapWei, 'FLOWGATE_MAX_DAILY_VALUE_CAP_WEI');
  }
  if (change.dailySolanaCapLamports != null && BigInt(change.dailySolanaCapLamports) > maxDailySolanaValueCapLamports) {
    throw aboveMaximum('dailySolanaCapLamports', change.dailySolanaCapLamports, maxDailySolanaValueCapLamports, 'FLOWGATE_MAX_DAILY_SOLANA_VALUE_CAP_LAMPORTS');
  }
  const seen = new Set<number>();
  for (const [i, { chainId, dailyCapWei }] of (change.chainCaps ?? []).entries()) {
    const issue = (message: string) =>
      badRequest('invalid_input', `chainCaps[${i}]: ${message}`, { issues: [{ path: ['chainCaps', i, 'chainId'], message, code: 'custom' }] });
    if (seen.has(chainId)) throw issue(`chain ${chainId} is named twice`);
    seen.add(chainId);
    const chain = chains.get(chainId);
    if (!chain) throw badRequest('unsupported_chain', `chainCaps[${i}]: no chain ${chainId} on this gateway (GET /api/chains lists them).`, { chainId });
    if (chain.chainType !== 'evm') {
      throw issue(`chain ${chainId} is not an EVM chain; the Solana cap is dailySolanaCapLamports`);
    }
    if (dailyCapWei !== null && BigInt(dailyCapWei) > maxDailyValueCapWei) {
      throw aboveMaximum(`chainCaps[${i}].dailyCapWei`, dailyCapWei, maxDailyValueCapWei, 'FLOWGATE_MAX_DAILY_VALUE_CAP_WEI');
    }
  }
}

/** Writes the change and one audit row per cap that changed, in one transaction. */
export async function applySpendCapChange(
  store: Store,
  actor: Pick<Principal, 'organizationId' | 'userId' | 'kind' | 'keyId'>,
  change: SpendCapChange,
  ip: string,
): Promise<void> {
  const organizationId = actor.organizationId;
  await store.transaction().execute(async (trx) => {
    const audit = (target: string, from: string | null, to: string | null) =>
      from === to ? undefined : recordAudit(trx, { organizationId, actor, action: 'spend_cap_changed', target, ip, details: { from, to } });
    const org = await trx
      .selectFrom('organizations')
      .select(['daily_cap_wei', 'daily_solana_cap_lamports'])
      .where('id', '=', organizationId)
      .executeTakeFirstOrThrow();
    if (change.dailyCapWei !== undefined) {
      await trx.updateTable('organizations').set({ daily_cap_wei: change.dailyCapWei }).where('id', '=', organizationId).execute();
      await audit('evm', org.daily_cap_wei, change.dailyCapWei);
    }
    if (change.dailySolanaCapLamports !== undefined) {
      await trx.updateTable('organizations').set({ daily_solana_cap_lamports: change.dailySolanaCapLamports }).where('id', '=', organizationId).execute();
      await audit('solana', org.daily_solana_cap_lamports, change.dailySolanaCapLamports);
    }
    for (const { chainId, dailyCapWei } of change.chainCaps ?? []) {
      const current = await trx
        .selectFrom('organization_chain_caps')
        .select('daily_cap_wei')
        .where('organization_id', '=', organizationId)
        .where('chain_id', '=', chainId)
        .executeTakeFirst();
      if (dailyCapWei === null) {
        await trx.deleteFrom('organization_chain_caps').where('organization_id', '=', organizationId).where('chain_id', '=', chainId).execute();
      } else {
        await trx
          .insertInto('organization_chain_caps')
          .values({ organization_id: organizationId, chain_id: chainId, daily_cap_wei: dailyCapWei, updated_at: nowIso(), updated_by: actor.userId })
          .onConflict((oc) =>
            oc.columns(['organization_id', 'chain_id']).doUpdateSet({ daily_cap_wei: dailyCapWei, updated_at: nowIso(), updated_by: actor.userId }),
          )
          .execute();
      }
      await audit(`chain:${chainId}`, current?.daily_cap_wei ?? null, dailyCapWei);
    }
  });
}
