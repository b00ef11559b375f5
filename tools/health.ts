import { sql } from 'kysely';
import { z } from 'zod';
import { ServiceError } from '../src/errors.ts';
import { storeKind } from '../src/store/db.ts';
import { GATEWAY_VERSION } from '../src/version.ts';
import { defineTool } from './define.ts';

const startedAt = Date.now();

const storeStatus = z.object({ kind: z.enum(['sqlite', 'postgres']), reachable: z.boolean() });

export const health = defineTool({
  name: 'health',
  title: 'Health check',
  description:
    'Liveness and readiness: 200 when the gateway and its database answer, 503 (code unavailable) otherwise. `store` names the database kind (sqlite or postgres) and whether it answered.',
  scope: 'public',
  input: z.object({}),
  output: z.object({ status: z.literal('ok'), version: z.string(), uptimeSeconds: z.number(), database: z.literal('ok'), store: storeStatus }),
  rest: { method: 'GET', path: '/healthz', cacheControl: 'no-store', unmetered: true },
  mcp: false,
  async handler(_input, { services }) {
    const kind = storeKind(services.config.databaseUrl);
    try {
      await sql`select 1`.execute(services.store);
    } catch {
      // No driver text: it may name hosts; the operator reads the database's own logs.
      throw new ServiceError(503, 'unavailable', `The ${kind === 'postgres' ? 'PostgreSQL' : 'SQLite'} database is not answering; retry shortly`, {
        store: { kind, reachable: false },
      });
    }
    return {
      status: 'ok' as const,
      version: GATEWAY_VERSION,
      uptimeSeconds: Math.round((Date.now() - startedAt) / 1000),
      database: 'ok' as const,
      store: { kind, reachable: true },
    };
  },
});

export const healthTools = [health];
