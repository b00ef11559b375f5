/** The tests' PostgreSQL: a throwaway embedded cluster (shared with the scale-out benchmark), or the databases of the run's shared one. */
export { postgresDatabases, startPostgres, type TestPostgres } from '../../scripts/embedded-postgres.ts';
