import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { registry } from '../tools/index.ts';

/**
 * The README's "What works today" table is written by hand, so it is held
 * against the registry: every REST route and MCP tool appears in it, and it
 * names none that do not exist.
 */

const readme = fs.readFileSync('README.md', 'utf8');
const section = readme.slice(readme.indexOf('## What works today'), readme.indexOf('\n## ', readme.indexOf('## What works today') + 5));
const rows = section.split('\n').filter((line) => line.startsWith('| ') && !line.startsWith('| Area') && !line.startsWith('|---'));
const cells = rows.map((row) => row.split(' | '));
const restText = cells.map((c) => c[1] ?? '').join(' ');
const mcpText = cells.map((c) => c[2] ?? '').join(' ');

/** `/api/workflows/:workflowId/execute` and `/api/workflows/{id}/execute` both become `/api/workflows/{}/execute`. */
const shape = (path: string) => path.replace(/:[A-Za-z_]+|\{[A-Za-z_]+\}/g, '{}').replace(/\/$/, '');
const documentedPaths = new Set([...restText.matchAll(/(\/[A-Za-z0-9_.{}\-/:]+)/g)].map((m) => shape(m[1]!)));

describe('README route table', () => {
  it('lists every REST route of the registry', () => {
    const missing = registry
      .filter((t) => t.rest)
      .map((t) => `${t.rest!.method} ${t.rest!.path}`)
      .filter((route) => !documentedPaths.has(shape(route.split(' ')[1]!)));
    expect(missing).toEqual([]);
  });

  it('lists every MCP tool, and no tool that does not exist', () => {
    const exposed = registry.filter((t) => t.mcp).map((t) => t.name);
    const named = [...mcpText.matchAll(/`([a-z][a-z0-9_]+)`/g)].map((m) => m[1]!);
    expect(exposed.filter((name) => !named.includes(name))).toEqual([]);
    expect(named.filter((name) => !exposed.includes(name))).toEqual([]);
  });

  it('names no REST path the registry does not serve', () => {
    const served = new Set(registry.filter((t) => t.rest).map((t) => shape(t.rest!.path)));
    const extra = [...documentedPaths].filter((p) => p.startsWith('/api/') && !served.has(p));
    expect(extra).toEqual([]);
  });
});
