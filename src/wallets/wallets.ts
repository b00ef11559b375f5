import { generatePrivateKey } from 'viem/accounts';
import { addressOfKey } from './evm-key.ts';
import type { Store } from '../store/db.ts';
import type { WalletsTable } from '../store/schema.ts';
import { first, prepared } from '../store/prepared.ts';
import type { SecretBox } from './crypto.ts';
import { nowIso } from '../ids.ts';
import { generateSolanaKeypair } from './solana-keypair.ts';

/** Public view of an organization wallet; keys stay sealed in the store. */
export interface WalletAddresses {
  walletAddress: string;
  solanaAddress: string;
}

/** Generates an EVM and a Solana key locally and stores them sealed under the organization id. */
export async function provisionWallet(store: Store, box: SecretBox, organizationId: string): Promise<WalletAddresses> {
  const evmKey = generatePrivateKey();
  const solana = generateSolanaKeypair();
  const row = {
    organization_id: organizationId,
    evm_address: addressOfKey(evmKey),
    evm_key_encrypted: box.seal(evmKey, organizationId),
    solana_address: solana.address,
    solana_key_encrypted: box.seal(solana.secretKey.toString('base64'), organizationId),
    created_at: nowIso(),
  };
  await store.insertInto('wallets').values(row).execute();
  return { walletAddress: row.evm_address, solanaAddress: row.solana_address };
}

// Read twice by every paid call (its 402 and its payment): compiled once.
const selectAddresses = prepared<{ organizationId: string }, Pick<WalletsTable, 'evm_address' | 'solana_address'>>((db: Store, a) =>
  db.selectFrom('wallets').select(['evm_address', 'solana_address']).where('organization_id', '=', a.organizationId),
);

export async function getWalletAddresses(store: Store, organizationId: string): Promise<WalletAddresses | undefined> {
  const row = await first(selectAddresses, store, { organizationId });
  return row && { walletAddress: row.evm_address, solanaAddress: row.solana_address };
}

/** The organization wallet's private keys, opened for an export the caller has authorized (owner, step-up); never logged. */
export async function exportWalletKeys(
  store: Store,
  box: SecretBox,
  organizationId: string,
): Promise<{ walletAddress: string; privateKey: string; solanaAddress: string; solanaSecretKey: number[] } | undefined> {
  const row = await store.selectFrom('wallets').selectAll().where('organization_id', '=', organizationId).executeTakeFirst();
  if (!row) return undefined;
  return {
    walletAddress: row.evm_address,
    privateKey: box.open(row.evm_key_encrypted, organizationId),
    solanaAddress: row.solana_address,
    solanaSecretKey: [...Buffer.from(box.open(row.solana_key_encrypted, organizationId), 'base64')],
  };
}

/** Whether `box` opens the stored wallets (checked on one; no box opens none); undefined when there are none. Nothing opened leaves this function. */
export async function masterKeyOpensWallets(store: Store, box: SecretBox | undefined): Promise<boolean | undefined> {
  const row = await store.selectFrom('wallets').select(['organization_id', 'evm_key_encrypted']).limit(1).executeTakeFirst();
  if (!row) return undefined;
  if (!box) return false;
  try {
    box.open(row.evm_key_encrypted, row.organization_id);
    return true;
  } catch {
    return false;
  }
}
