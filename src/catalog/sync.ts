import { sql } from 'kysely';
import type { Services } from '../services.ts';
import { prepareGraph } from '../engine/validate.ts';
import { createWorkflow } from '../engine/workflow-writes.ts';
import type { GraphInput } from '../engine/graph.ts';
import { nowIso } from '../ids.ts';
import { ServiceError } from '../errors.ts';
import type { CatalogEntry } from './entry.ts';
import { CatalogError } from './load.ts';
import { provisionCatalogEmail, resolveIntegrationNames } from './integrations.ts';
import { CATALOG_ORGANIZATION_SLUG } from './names.ts';

/**
 * Makes the database match workflows-catalog/: each file is a public,
 * listed workflow of the catalog organization. A changed file updates the
 * workflow and its listing in place (same workflow id, so execution history
 * stays attached); a removed file unlists its slug. A file whose steps
 * cannot run on this gateway yet (an action without a runner) is stored
 * private and unlisted, so its slug stays reserved but nothing offers it;
 * calling it answers 404 `listing_unavailable` (see listings.ts).
 */

export { CATALOG_ORGANIZATION_SLUG };

export async function syncCatalog(
  services: Pick<Services, 'store' | 'organizations' | 'secrets' | 'config'>,
  entries: readonly CatalogEntry[],
): Promise<{ organizationId: string; slugs: string[] }> {
  const { store } = services;
  const { organization, owner } = await services.organizations.ensure(CATALOG_ORGANIZATION_SLUG);
  await provisionCatalogEmail(services, organization.id);

  for (const entry of entries) {
    let prepared;
    try {
      prepared = prepareGraph(await resolveIntegrationNames(services, organization.id, entry.workflow as GraphInput));
    } catch (error) {
      const detail = error instanceof ServiceError ? error.message : String(error);
      throw new CatalogError(`${entry.slug}.json`, `workflow: ${detail}`);
    }
    const { graph, report } = prepared;
    const fatal = report.errors.find((e) => e.code !== 'action_not_available');
    if (fatal)
      throw new CatalogError(`${entry.slug}.json`, `workflow: ${fatal.path}${fatal.nodeId === null ? '' : ` (node "${fatal.nodeId}")`}: ${fatal.message}`);
    const runnable = report.errors.length === 0;
    const now = nowIso();
    const existing = await store
      .selectFrom('workflow_listings')
      .select(['workflow_id', 'source', 'organization_id'])
      .where('slug', '=', entry.slug)
      .executeTakeFirst();
    if (existing && existing.source !== 'catalog') {
      throw new CatalogError(`${entry.slug}.json`, `the slug is already taken by a workflow published by organization ${existing.organization_id}`);
    }
    let workflowId = existing?.workflow_id;
    if (!workflowId) {
      workflowId = (
        await createWorkflow(store, { organizationId: organization.id, userId: owner.id }, { name: entry.title, description: entry.description, graph })
      ).id;
    }
    await store.transaction().execute(async (trx) => {
      await trx
        .updateTable('workflows')
        .set({
          name: entry.title,
          description: entry.description,
          nodes: JSON.stringify(graph.nodes),
          edges: JSON.stringify(graph.edges),
          visibility: runnable ? 'public' : 'private',
          enabled: 1,
          published_at: sql`coalesce(published_at, ${now})`,
          updated_at: now,
        })
        .where('id', '=', workflowId)
        .execute();
      const values = {
        workflow_id: workflowId,
        organization_id: organization.id,
        source: 'catalog' as const,
        title: entry.title,
        description: entry.description,
        workflow_type: entry.type,
        chain_id: entry.chainId,
        price: entry.price,
        input_schema: JSON.stringify(entry.inputSchema),
        output_fields: JSON.stringify(entry.outputFields),
        result_source: entry.result ? JSON.stringify(entry.result) : null,
        protocols: JSON.stringify(entry.protocols),
        listed: runnable ? 1 : 0,
        updated_at: now,
      };
      if (existing) await trx.updateTable('workflow_listings').set(values).where('slug', '=', entry.slug).execute();
      else
        await trx
          .insertInto('workflow_listings')
          .values({ ...values, slug: entry.slug, created_at: now })
          .execute();
    });
  }

  const slugs = entries.map((e) => e.slug);
  let stale = store.updateTable('workflow_listings').set({ listed: 0, updated_at: nowIso() }).where('source', '=', 'catalog').where('listed', '=', 1);
  if (slugs.length > 0) stale = stale.where('slug', 'not in', slugs);
  await stale.execute();
  return { organizationId: organization.id, slugs };
}
