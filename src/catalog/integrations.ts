import type { Services } from '../services.ts';
import { createIntegration, updateIntegration } from '../org/integrations.ts';
import type { GraphInput } from '../engine/graph.ts';
import { CATALOG_EMAIL_INTEGRATION } from './names.ts';

/**
 * Integrations of catalog workflows. A catalog file cannot know an
 * integration's id (it is minted per database), so its nodes name the
 * integration (`"integrationId": "catalog-email"`) and the sync puts in the
 * id of the catalog organization's integration of that name. The e-mail
 * one is provisioned from the operator's settings (config.catalogEmail).
 */

export { CATALOG_EMAIL_INTEGRATION };

/** Creates or updates the catalog organization's `catalog-email` Resend integration from the configuration. */
export async function provisionCatalogEmail(services: Pick<Services, 'store' | 'secrets' | 'config'>, organizationId: string): Promise<void> {
  const settings = services.config.catalogEmail;
  if (!settings) return;
  const config = { apiKey: settings.apiKey, fromEmail: settings.fromEmail, ...(settings.apiBaseUrl ? { apiBaseUrl: settings.apiBaseUrl } : {}) };
  const existing = await services.store
    .selectFrom('integrations')
    .select(['id', 'type'])
    .where('organization_id', '=', organizationId)
    .where('name', '=', CATALOG_EMAIL_INTEGRATION)
    .executeTakeFirst();
  if (existing?.type === 'resend')
    await updateIntegration(services, organizationId, existing.id, { config: { ...config, apiBaseUrl: settings.apiBaseUrl ?? null } });
  else await createIntegration(services, { organizationId, name: CATALOG_EMAIL_INTEGRATION, type: 'resend', config });
}

/** The graph with each `integrationId` that names an integration of the organization replaced by its id. */
export async function resolveIntegrationNames(services: Pick<Services, 'store'>, organizationId: string, graph: GraphInput): Promise<GraphInput> {
  const rows = await services.store.selectFrom('integrations').select(['id', 'name']).where('organization_id', '=', organizationId).execute();
  if (rows.length === 0) return graph;
  const byName = new Map(rows.map((r) => [r.name, r.id]));
  const nodes = (graph.nodes ?? []).map((node) => {
    const config = (node as { data?: { config?: Record<string, unknown> } }).data?.config;
    const id = typeof config?.integrationId === 'string' ? byName.get(config.integrationId) : undefined;
    if (!id) return node;
    const n = node as { data: { config: Record<string, unknown> } };
    return { ...n, data: { ...n.data, config: { ...n.data.config, integrationId: id } } };
  });
  return { ...graph, nodes } as GraphInput;
}
