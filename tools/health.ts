import { sql } from 'kysely';
import { z } from 'zod';
import { ServiceError } from '../src/errors.ts';
import { GATEWAY_VERSION } from '../src/version.ts';
import { defineTool } from './define.ts';

const startedAt = Date.now();

export const health = defineTool({
  name: 'health',
  title: 'Health check',
  description: 'Liveness and readiness: 200 when the gateway and its database answer, 503 otherwise.',
  scope: 'public',
  input: z.object({}),
  output: z.object({ status: z.literal('ok'), version: z.string(), uptimeSeconds: z.number(), database: z.literal('ok') }),
  rest: { method: 'GET', path: '/healthz', cacheControl: 'no-store' },
  mcp: false,
  async handler(_input, { services }) {
    try {
      await sql`select 1`.execute(services.store);
    } catch {
      throw new ServiceError(503, 'unavailable', 'The database is not answering');
    }
    return { status: 'ok' as const, version: GATEWAY_VERSION, uptimeSeconds: Math.round((Date.now() - startedAt) / 1000), database: 'ok' as const };
  },
});

export const healthTools = [health];
