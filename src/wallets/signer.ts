import type { Address, Hex } from 'viem';
import type { LocalAccount } from 'viem/accounts';
import type { Store } from '../store/db.ts';
import type { SecretBox } from './crypto.ts';
import { ServiceError } from '../errors.ts';
import { keyAccount } from './evm-key.ts';

/**
 * The organization's EVM signer. The key is decrypted only here, only in
 * memory, for the signing call at hand; it is never logged or returned.
 * The address is the one stored with the key when the wallet was made
 * (src/wallets/wallets.ts), not derived again on every send.
 */
export async function organizationAccount(store: Store, box: SecretBox, organizationId: string): Promise<LocalAccount> {
  const row = await store.selectFrom('wallets').select(['evm_address', 'evm_key_encrypted']).where('organization_id', '=', organizationId).executeTakeFirst();
  if (!row) throw new ServiceError(409, 'wallet_missing', 'This organization has no wallet yet; it is created with the organization.');
  return keyAccount(box.open(row.evm_key_encrypted, organizationId) as Hex, row.evm_address as Address);
}
