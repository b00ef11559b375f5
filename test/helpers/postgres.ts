/** The tests' PostgreSQL: a throwaway embedded cluster (shared with the scale-out benchmark). */
export { startPostgres, type TestPostgres } from '../../scripts/embedded-postgres.ts';
