import type { Store } from '../store/db.ts';
import type { Services } from '../services.ts';
import { ServiceError } from '../errors.ts';
import { nowIso } from '../ids.ts';
import { getWorkflow, workflowNotFound } from '../engine/workflows.ts';
import { isPostgres } from '../store/dialect.ts';
import type { WorkflowNode } from '../engine/graph.ts';
import { describeUnavailable, unavailableSteps } from '../engine/availability.ts';
import { toAtomicUnits } from '../payments/amount.ts';
import { checkInputSchema } from './input.ts';
import { assertRoom } from '../org/quotas.ts';
import { findListingByWorkflow, toListing, type Listing } from './listings.ts';

/**
 * publish_workflow / unlist_workflow: an organization lists one of its own
 * workflows under a slug, with the price and input schema it sets. Slugs are
 * one namespace shared with the catalog organization, whose slugs (listed or
 * not) stay reserved for workflows-catalog/.
 */

/** Highest price a published workflow may ask, in USD (a typo such as "50000" instead of "0.5" is refused, not charged). */
export const MAX_PUBLISHED_PRICE_USD = '1000';

/** Documented result fields a listing may name, and the length of each name. */
export const MAX_OUTPUT_FIELDS = 50;
export const MAX_OUTPUT_FIELD_NAME = 100;

/** A listing's own fields as a publisher sends them; `title` defaults to the workflow name, and an absent `result` means the final node's whole output. */
export type PublishRequest = Pick<Listing, 'slug' | 'description' | 'type' | 'chainId' | 'price' | 'inputSchema' | 'outputFields'> & {
  title?: string;
  result?: NonNullable<Listing['result']>;
};

function checkPrice(price: string | null, type: 'read' | 'write'): void {
  if (price === null) return;
  // A write listing answers calldata built from its inputs, without a run to charge for: a price there was advertised
  // (402 offers, a "costs" line in its tool) while every call got the calldata free.
  if (type === 'write') {
    throw new ServiceError(
      400,
      'invalid_input',
      'A write listing returns unsigned calldata and cannot be priced; omit price (or use null), or list it as read.',
      {
        field: 'price',
      },
    );
  }
  // Integer comparison in micro-USD: no floats anywhere near money.
  if (BigInt(toAtomicUnits(price, 6)) > BigInt(toAtomicUnits(MAX_PUBLISHED_PRICE_USD, 6))) {
    throw new ServiceError(400, 'invalid_input', `price ${price} is above the maximum of ${MAX_PUBLISHED_PRICE_USD} USD per call.`, { field: 'price' });
  }
}

/** A write listing answers calldata built from the workflow's contract-write node, so it must have one. */
function checkType(type: 'read' | 'write', nodes: readonly { type: string; data: { config: Record<string, unknown> } }[]): void {
  if (type !== 'write') return;
  if (!nodes.some((n) => n.data.config.actionType === 'web3/write-contract')) {
    throw new ServiceError(
      400,
      'invalid_input',
      'type "write" needs a web3/write-contract node in the workflow: a write listing answers that transaction as unsigned calldata. Use type "read" to run the workflow instead.',
      {
        field: 'type',
      },
    );
  }
}

/** The first free `<slug>-<n>`, for a 409 an agent can act on. */
async function suggestSlug(store: Store, slug: string): Promise<string> {
  const taken = new Set((await store.selectFrom('workflow_listings').select('slug').where('slug', 'like', `${slug}-%`).execute()).map((r) => r.slug));
  for (let n = 2; ; n++) {
    const candidate = `${slug.slice(0, 80 - String(n).length - 1)}-${n}`;
    if (!taken.has(candidate)) return candidate;
  }
}

const catalogManaged = (slug: string) =>
  new ServiceError(
    403,
    'listing_managed_by_catalog',
    `The listing ${slug} belongs to the gateway's workflow catalog (workflows-catalog/) and cannot be changed or unlisted through the API.`,
  );

type ListedNodes = readonly WorkflowNode[];

/** What a listing needs of its workflow's graph: a contract-write node for a write listing, steps that run here, its result node. */
function assertListable(nodes: ListedNodes, listing: { type: 'read' | 'write'; result?: { nodeId: string } | null }): void {
  checkType(listing.type, nodes);
  const unavailable = unavailableSteps(nodes);
  if (unavailable.length > 0) {
    // A listing is an offer to callers; one whose every run would fail is not listed.
    throw new ServiceError(
      400,
      'action_not_available',
      `This workflow cannot be listed: ${describeUnavailable(unavailable)}, which cannot run on this gateway yet. Replace those steps first.`,
      {
        unavailableActions: [...new Set(unavailable.map((s) => s.actionType))],
      },
    );
  }
  if (listing.result && !nodes.some((n) => n.id === listing.result!.nodeId)) {
    throw new ServiceError(400, 'invalid_input', `result.nodeId ${listing.result.nodeId} is not a node of this workflow.`, { field: 'result.nodeId' });
  }
}

/**
 * A listed workflow's new graph must still serve its listing, or the gateway would go on offering
 * (in /openapi.json, GET /api/mcp/workflows, /mcp/w/{slug}) a call that can only fail: a write
 * listing whose contract-write node is gone, a result node that no longer exists, a step that
 * cannot run here. Refused as a save that failed validation, naming the listing and both ways out.
 */
export async function assertGraphKeepsListing(store: Store, workflowId: string, nodes: ListedNodes): Promise<void> {
  const listed = await store
    .selectFrom('workflow_listings')
    .selectAll()
    .where('workflow_id', '=', workflowId)
    .where('listed', '=', 1)
    .where('source', '=', 'published')
    .executeTakeFirst();
  if (!listed) return;
  const row = toListing(listed);
  try {
    assertListable(nodes, row);
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    const message = `This workflow is listed as "${row.slug}" (${row.type}), and the new graph would break that listing: ${error.message} Keep the graph fit for the listing, or unlist it first (unlist_workflow, DELETE /api/workflows/${workflowId}/listing).`;
    throw new ServiceError(400, 'invalid_workflow', message, {
      invalidFields: [{ code: 'listing', nodeId: null, nodeLabel: null, path: 'nodes', message }],
      warnings: [],
      listing: row.slug,
    });
  }
}

/**
 * A listed workflow stays enabled: disabled, every call answered 410 while the listing went on being offered (in
 * /openapi.json, GET /api/mcp/workflows, /mcp/w/{slug}). Refused, naming the way out.
 */
export async function assertEnabledWhileListed(store: Store, organizationId: string, workflowId: string): Promise<void> {
  const listed = await store
    .selectFrom('workflow_listings')
    .select('slug')
    .where('workflow_id', '=', workflowId)
    .where('organization_id', '=', organizationId)
    .where('listed', '=', 1)
    .executeTakeFirst();
  if (!listed) return;
  throw new ServiceError(
    409,
    'conflict',
    `This workflow is listed as "${listed.slug}": callers would get 410 while the listing is still offered. Unlist it first (unlist_workflow, DELETE /api/workflows/${workflowId}/listing), then disable it.`,
    { field: 'enabled', listing: listed.slug },
  );
}

export async function publishListing(
  services: Pick<Services, 'store' | 'organizations'>,
  organizationId: string,
  workflowId: string,
  request: PublishRequest,
  /** Listed workflows the organization may hold (config.quotas.listings); relisting or updating a listed one is never refused. Unset: no bound. */
  quota?: number,
): Promise<Listing> {
  const { store } = services;
  const workflow = await getWorkflow(store, organizationId, workflowId);
  checkInputSchema(request.inputSchema);
  checkPrice(request.price, request.type);
  assertListable(workflow.nodes, request);
  // A listing is an offer to callers; every call of a disabled workflow answers 410.
  if (!workflow.enabled) throw disabledWorkflow(workflowId);
  if (request.price !== null && !(await services.organizations.wallet(organizationId))) {
    throw new ServiceError(409, 'no_wallet', 'A paid listing is paid into the organization wallet, and this organization has none yet; nothing was published.');
  }

  const bySlug = await store.selectFrom('workflow_listings').selectAll().where('slug', '=', request.slug).executeTakeFirst();
  if (bySlug && bySlug.source === 'catalog') throw await slugTaken(store, request.slug, 'it is reserved by the workflow catalog');
  if (bySlug && bySlug.organization_id !== organizationId) throw await slugTaken(store, request.slug, 'another organization uses it');
  if (bySlug && bySlug.workflow_id !== workflowId && bySlug.listed === 1)
    throw await slugTaken(store, request.slug, `your workflow ${bySlug.workflow_id} is listed under it`);
  const byWorkflow = await findListingByWorkflow(store, workflowId);
  if (byWorkflow?.source === 'catalog') throw catalogManaged(byWorkflow.slug);

  const now = nowIso();
  const values = {
    slug: request.slug,
    workflow_id: workflowId,
    organization_id: organizationId,
    source: 'published' as const,
    title: request.title ?? workflow.name,
    description: request.description,
    workflow_type: request.type,
    chain_id: request.chainId,
    price: request.price,
    input_schema: JSON.stringify(request.inputSchema),
    output_fields: JSON.stringify(request.outputFields),
    result_source: request.result ? JSON.stringify(request.result) : null,
    protocols: JSON.stringify([]),
    listed: 1,
    updated_at: now,
  };
  await store.transaction().execute(async (trx) => {
    // Again, with the workflow's row locked as a workflow update locks it: one disabled (or its graph changed) at the
    // same moment is seen here, or sees this listing (src/engine/workflow-writes.ts, `guard`).
    const read = trx.selectFrom('workflows').select(['enabled', 'nodes']).where('id', '=', workflowId).where('organization_id', '=', organizationId);
    const current = await (isPostgres(trx) ? read.forUpdate() : read).executeTakeFirst();
    if (!current) throw workflowNotFound(workflowId);
    if (!current.enabled) throw disabledWorkflow(workflowId);
    assertListable(JSON.parse(current.nodes) as WorkflowNode[], request);
    const listed = await trx.selectFrom('workflow_listings').select('slug').where('workflow_id', '=', workflowId).where('listed', '=', 1).executeTakeFirst();
    if (!listed) await assertRoom(trx, 'listings', quota, organizationId);
    // One listing per workflow and per slug: drop this workflow's old slug and an unlisted row of ours holding the new one.
    await trx.deleteFrom('workflow_listings').where('workflow_id', '=', workflowId).where('slug', '!=', request.slug).execute();
    if (bySlug && bySlug.workflow_id !== workflowId) await trx.deleteFrom('workflow_listings').where('slug', '=', request.slug).execute();
    // Only ever overwrites this workflow's own row: a slug taken since the checks above is a 409, never a takeover.
    const written = await trx
      .insertInto('workflow_listings')
      .values({ ...values, created_at: now })
      .onConflict((oc) => oc.column('slug').doUpdateSet(values).where('workflow_listings.workflow_id', '=', workflowId))
      .executeTakeFirst();
    if (Number(written.numInsertedOrUpdatedRows ?? 0n) !== 1) throw await slugTaken(trx, request.slug, 'it was taken a moment ago');
  });
  return toListing(await store.selectFrom('workflow_listings').selectAll().where('slug', '=', request.slug).executeTakeFirstOrThrow());
}

const disabledWorkflow = (workflowId: string) =>
  new ServiceError(409, 'conflict', `Workflow ${workflowId} is disabled; enable it (PATCH /api/workflows/${workflowId} {"enabled": true}) before listing it.`, {
    field: 'enabled',
  });

async function slugTaken(store: Store, slug: string, why: string): Promise<ServiceError> {
  const suggestion = await suggestSlug(store, slug);
  return new ServiceError(409, 'slug_taken', `The slug "${slug}" is taken (${why}). Choose another, e.g. "${suggestion}".`, { slug, suggestion });
}

/** Unlists the organization's own workflow; the slug stays with the organization until it publishes it again or another workflow under it. */
export async function unlistListing(store: Store, organizationId: string, workflowId: string): Promise<{ slug: string }> {
  await getWorkflow(store, organizationId, workflowId);
  const row = await store.selectFrom('workflow_listings').selectAll().where('workflow_id', '=', workflowId).where('listed', '=', 1).executeTakeFirst();
  const listing = row && toListing(row);
  if (!listing || listing.organizationId !== organizationId) {
    throw new ServiceError(
      404,
      'listing_not_found',
      `Workflow ${workflowId} is not listed. Publish it with publish_workflow (POST /api/workflows/${workflowId}/listing).`,
    );
  }
  if (listing.source === 'catalog') throw catalogManaged(listing.slug);
  await store.updateTable('workflow_listings').set({ listed: 0, updated_at: nowIso() }).where('slug', '=', listing.slug).execute();
  return { slug: listing.slug };
}
