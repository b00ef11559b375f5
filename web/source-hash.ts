import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * A digest of everything the dashboard build is made from (web/src, the HTML
 * entry, the build config, and the exact versions of its packages). The build
 * writes it to web/dist/source-hash.txt; a test recomputes it, so a change to
 * the source without `npm run build:web` fails the suite instead of shipping
 * a stale committed build.
 */

const WEB = path.dirname(new URL(import.meta.url).pathname);
const PACKAGES = ['preact', 'uplot', 'vite', 'viem'];

function files(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => (entry.isDirectory() ? files(path.join(dir, entry.name)) : [path.join(dir, entry.name)]))
    .sort();
}

export function dashboardSourceHash(web = WEB): string {
  const hash = crypto.createHash('sha256');
  for (const file of [...files(path.join(web, 'src')), path.join(web, 'index.html'), path.join(web, 'vite.config.ts'), path.join(web, 'tsconfig.json')]) {
    hash.update(path.relative(web, file).split(path.sep).join('/'));
    hash.update('\0');
    // Line endings normalised: a checkout with CRLF builds the same bytes.
    hash.update(fs.readFileSync(file, 'utf8').replace(/\r\n/g, '\n'));
    hash.update('\0');
  }
  const manifest = JSON.parse(fs.readFileSync(path.join(web, '..', 'package.json'), 'utf8')) as Record<string, Record<string, string>>;
  for (const name of PACKAGES) hash.update(`${name}@${manifest.devDependencies?.[name] ?? manifest.dependencies?.[name]}\0`);
  return hash.digest('hex');
}

export const SOURCE_HASH_FILE = 'source-hash.txt';
