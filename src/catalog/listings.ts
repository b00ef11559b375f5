import type { Store } from '../store/db.ts';
import type { WorkflowListingsTable } from '../store/schema.ts';
import { ServiceError } from '../errors.ts';
import { first, prepared } from '../store/prepared.ts';
import { deepFreeze } from '../immutable.ts';
import { versioned } from '../store/versioned.ts';
import { describeUnavailable, unavailableSteps } from '../engine/availability.ts';
import type { WorkflowNode } from '../engine/graph.ts';

/** Listings as the domain sees them: a workflow callable by slug, with its price and contract. */

export interface Listing {
  slug: string;
  workflowId: string;
  organizationId: string;
  source: 'catalog' | 'published';
  title: string;
  description: string;
  type: 'read' | 'write';
  chainId: number | null;
  /** Decimal USD string; null = free. */
  price: string | null;
  inputSchema: Record<string, unknown>;
  outputFields: Record<string, string>;
  result: { nodeId: string; path: string } | null;
  protocols: string[];
}

export function toListing(row: WorkflowListingsTable): Listing {
  return {
    slug: row.slug,
    workflowId: row.workflow_id,
    organizationId: row.organization_id,
    source: row.source,
    title: row.title,
    description: row.description,
    type: row.workflow_type,
    chainId: row.chain_id,
    price: row.price,
    inputSchema: JSON.parse(row.input_schema),
    outputFields: JSON.parse(row.output_fields),
    result: row.result_source ? JSON.parse(row.result_source) : null,
    protocols: JSON.parse(row.protocols),
  };
}

export const listingNotFound = (slug: string) =>
  new ServiceError(
    404,
    'listing_not_found',
    `No listed workflow has the slug "${slug}". List the callable workflows with GET /api/mcp/workflows (MCP: search_workflows).`,
    {
      hint: 'GET /api/mcp/workflows',
    },
  );

/** The listed workflows, read again only when a change to them has moved the counter (migration 029). */
const current = versioned(
  'listings_version',
  async (store) => {
    const rows = await store.selectFrom('workflow_listings').selectAll().where('listed', '=', 1).orderBy('slug').execute();
    return {
      listings: deepFreeze(rows.map(toListing)),
      /** What callers built from these listings (listingsDerived), by owner and name. */
      derived: new WeakMap<object, Map<string, unknown>>(),
    };
  },
  (kept) => kept.listings.length,
);

/**
 * What `build` makes of the listed workflows (by slug, deeply frozen), built once per version of them:
 * the documents every anonymous client reads, which name every listing of every tenant, used to read and
 * parse them all on each request. The table is read again only when a change to it has moved the counter
 * (migration 029). `owner` is what the result also depends on (the gateway's services, an app) and `name`
 * tells one builder from another. The value is shared by every later caller: freeze it.
 */
export async function listingsDerived<T>(store: Store, owner: object, name: string, build: (listings: readonly Listing[]) => T): Promise<T> {
  const { value: entry } = await current(store);
  let byName = entry.derived.get(owner);
  if (!byName) entry.derived.set(owner, (byName = new Map()));
  if (!byName.has(name)) byName.set(name, build(entry.listings));
  return byName.get(name) as T;
}

// Read on every call: compiled once.
const selectListed = prepared<{ slug: string }, WorkflowListingsTable>((db: Store, a) =>
  db.selectFrom('workflow_listings').selectAll().where('slug', '=', a.slug).where('listed', '=', 1),
);

export async function getListing(store: Store, slug: string): Promise<Listing> {
  const row = await first(selectListed, store, { slug });
  if (!row) throw (await unavailableCatalogListing(store, slug)) ?? listingNotFound(slug);
  return toListing(row);
}

/**
 * A catalog slug that sync left unlisted because its steps cannot run here
 * (sync.ts): a 404 that says why, rather than "no such slug". Only on the
 * miss path, and only for the catalog's own listings.
 */
async function unavailableCatalogListing(store: Store, slug: string): Promise<ServiceError | undefined> {
  const row = await store
    .selectFrom('workflow_listings')
    .innerJoin('workflows', 'workflows.id', 'workflow_listings.workflow_id')
    .select(['workflows.nodes'])
    .where('workflow_listings.slug', '=', slug)
    .where('workflow_listings.source', '=', 'catalog')
    .where('workflow_listings.listed', '=', 0)
    .executeTakeFirst();
  const steps = row ? unavailableSteps(JSON.parse(row.nodes) as WorkflowNode[]) : [];
  if (steps.length === 0) return undefined;
  return new ServiceError(
    404,
    'listing_unavailable',
    `The workflow "${slug}" is not available on this gateway: ${describeUnavailable(steps)}, which cannot run here yet. Nothing was run or charged. List the callable workflows with GET /api/mcp/workflows.`,
    {
      hint: 'GET /api/mcp/workflows',
      unavailableActions: [...new Set(steps.map((s) => s.actionType))],
    },
  );
}

export async function findListingByWorkflow(store: Store, workflowId: string): Promise<Listing | undefined> {
  const row = await store.selectFrom('workflow_listings').selectAll().where('workflow_id', '=', workflowId).executeTakeFirst();
  return row && toListing(row);
}
