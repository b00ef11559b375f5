import fs from 'node:fs';
import path from 'node:path';

/**
 * A listening gateway advertises its public base URL in the data directory,
 * so `flowgate mcp` and the client commands (`flowgate run`, ...) on the same
 * directory find it (its port, not the default 3000) without being told.
 * A leaf module: the CLI reads it without loading the gateway.
 */
const baseUrlFile = (dataDir: string) => path.join(dataDir, 'base-url');

export function advertiseBaseUrl(dataDir: string, baseUrl: string): void {
  fs.writeFileSync(baseUrlFile(dataDir), `${baseUrl}\n`, { mode: 0o600 });
}

export function withdrawBaseUrl(dataDir: string, baseUrl: string): void {
  if (readAdvertisedBaseUrl(dataDir) === baseUrl) fs.rmSync(baseUrlFile(dataDir), { force: true });
}

export function readAdvertisedBaseUrl(dataDir: string): string | undefined {
  try {
    return fs.readFileSync(baseUrlFile(dataDir), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

export const advertisedBaseUrlPath = baseUrlFile;
