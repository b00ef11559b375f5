import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { catalogEntrySchema, type CatalogEntry } from './entry.ts';

/**
 * Reads workflows-catalog/*.json. A bad file stops start-up with one message naming the file and the field.
 * Input schemas are compiled on a listing's first call, not here (Ajv's code generation for every file was
 * about 0.1 s of each start); test/workflow-calls.test.ts holds every shipped schema to the publish check.
 */

export const CATALOG_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../workflows-catalog');

export class CatalogError extends Error {
  constructor(file: string, detail: string) {
    super(`Invalid catalog file ${file}: ${detail}`);
    this.name = 'CatalogError';
  }
}

export function loadCatalog(dir = CATALOG_DIR): CatalogEntry[] {
  if (!fs.existsSync(dir)) return [];
  const entries: CatalogEntry[] = [];
  const seen = new Set<string>();
  for (const name of fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()) {
    const file = path.join(dir, name);
    let raw: unknown;
    try {
      raw = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch (error) {
      throw new CatalogError(name, `not valid JSON (${(error as Error).message})`);
    }
    const parsed = catalogEntrySchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new CatalogError(name, `${issue.path.join('.') || '(root)'} ${issue.message}`);
    }
    const entry = parsed.data;
    if (`${entry.slug}.json` !== name) throw new CatalogError(name, `slug "${entry.slug}" must match the file name`);
    if (seen.has(entry.slug)) throw new CatalogError(name, `duplicate slug ${entry.slug}`);
    if (entry.type === 'read' && !entry.result) throw new CatalogError(name, 'a read workflow needs `result` {nodeId, path}');
    seen.add(entry.slug);
    entries.push(entry);
  }
  return entries;
}
