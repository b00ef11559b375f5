import { getIntegrationForRun } from '../../org/integrations.ts';
import { databaseAccess, DatabaseError, queryDatabase, type DatabaseConfig } from '../../org/database-client.ts';
import { NodeError, type NodeRunner } from './types.ts';

export { PARAM_TOKEN } from '../../org/database-client.ts';

/**
 * `Database Query` against a `database` integration (SQLite file or
 * PostgreSQL). The executor has already turned every template into a bound
 * parameter (PARAM_TOKEN n); values never become SQL text. The sqlite path
 * and the postgres host are checked again on every run (queryDatabase).
 */
export const databaseQueryRunner: NodeRunner = async (config, ctx) => {
  if (typeof config.integrationId !== 'string' || !config.integrationId)
    throw new NodeError('integrationId is required: the id of a database integration (list_integrations).');
  if (typeof config.dbQuery !== 'string' || !config.dbQuery.trim()) throw new NodeError('dbQuery is required.');
  const params = Array.isArray(config.__params) ? (config.__params as unknown[]) : [];
  const integration = await getIntegrationForRun(ctx.services, ctx.organizationId, config.integrationId).catch((error: unknown) => {
    throw new NodeError(error instanceof Error ? error.message : String(error));
  });
  if (integration.type !== 'database') throw new NodeError(`Integration ${integration.id} is a ${integration.type} integration, not a database.`);
  try {
    const result = await queryDatabase(databaseAccess(ctx.services.config), integration.config as DatabaseConfig, config.dbQuery, params, ctx.signal);
    return { success: true, data: result, rows: result.rows, rowCount: result.rowCount };
  } catch (error) {
    if (error instanceof DatabaseError) throw new NodeError(error.message);
    throw new NodeError(`The query failed: ${error instanceof Error ? error.message : String(error)}`);
  }
};
