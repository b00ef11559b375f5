import fs from 'node:fs';
import path from 'node:path';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM for secrets at rest (wallet keys, later integration credentials).
 * The master key comes from FLOWGATE_MASTER_KEY or a generated key file
 * (mode 0600) in the data directory.
 */

export interface SecretBox {
  /** `aad` binds the ciphertext to its owner (e.g. the organization id) so rows can't be swapped. */
  seal(plaintext: string, aad: string): string;
  open(sealed: string, aad: string): string;
}

const KEY_FILE = 'master.key';

export const masterKeyFile = (dataDir: string) => path.join(dataDir, KEY_FILE);

/** The master key a gateway on `dataDir` uses, and where it comes from; undefined when it would generate one. */
export function readMasterKey(dataDir: string, fromEnv: string | undefined): { key: Buffer; from: 'env' | 'file' } | undefined {
  if (fromEnv) return { key: Buffer.from(fromEnv.replace(/^0x/, ''), 'hex'), from: 'env' };
  const file = masterKeyFile(dataDir);
  if (!fs.existsSync(file)) return undefined;
  const hex = fs.readFileSync(file, 'utf8').trim();
  if (!/^[0-9a-f]{64}$/i.test(hex)) throw new Error(`Master key file ${file} is corrupt: expected 64 hex characters`);
  return { key: Buffer.from(hex, 'hex'), from: 'file' };
}

export function loadMasterKey(dataDir: string, fromEnv: string | undefined): Buffer {
  const existing = readMasterKey(dataDir, fromEnv);
  if (existing) return existing.key;
  const file = masterKeyFile(dataDir);
  fs.mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  // 'wx' refuses to overwrite a key another process just wrote.
  fs.writeFileSync(file, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  return key;
}

export function createSecretBox(masterKey: Buffer): SecretBox {
  if (masterKey.length !== 32) throw new Error('Master key must be 32 bytes');
  return {
    seal(plaintext, aad) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', masterKey, iv);
      cipher.setAAD(Buffer.from(aad, 'utf8'));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join(':');
    },
    open(sealed, aad) {
      const [version, iv, tag, body] = sealed.split(':');
      if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('Unrecognised sealed secret format');
      const decipher = createDecipheriv('aes-256-gcm', masterKey, Buffer.from(iv, 'base64'));
      decipher.setAAD(Buffer.from(aad, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
    },
  };
}
