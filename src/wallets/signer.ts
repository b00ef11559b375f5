import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import type { Store } from '../store/db.ts';
import type { SecretBox } from './crypto.ts';
import { ServiceError } from '../errors.ts';

/**
 * The organization's EVM signer. The key is decrypted only here, only in
 * memory, for the signing call at hand; it is never logged or returned.
 */
export async function organizationAccount(store: Store, box: SecretBox, organizationId: string): Promise<PrivateKeyAccount> {
  const row = await store.selectFrom('wallets').select('evm_key_encrypted').where('organization_id', '=', organizationId).executeTakeFirst();
  if (!row) throw new ServiceError(409, 'wallet_missing', 'This organization has no wallet yet; it is created with the organization.');
  return privateKeyToAccount(box.open(row.evm_key_encrypted, organizationId) as `0x${string}`);
}
