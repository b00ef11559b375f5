import { createRequire } from 'node:module';
import type pg from 'pg';

/**
 * The `pg` driver, loaded on first use: about 15 MB and 50 ms at start that a
 * gateway on SQLite (the default) without PostgreSQL integrations never needs.
 * Types come from `import type`, which costs nothing at run time.
 */
let loaded: typeof pg | undefined;
export const loadPg = (): typeof pg => (loaded ??= createRequire(import.meta.url)('pg') as typeof pg);
