import { ServiceError } from './errors.ts';
import { isStoreUnreachable } from './store/db.ts';

/**
 * A request that failed because the database is unreachable is a 503 the
 * client can retry, not a gateway bug. Both edges map it here, once; the
 * driver's text (hosts, ports) stays in the log.
 */
export const storeUnavailable = (error: unknown): ServiceError | undefined =>
  isStoreUnreachable(error)
    ? new ServiceError(503, 'unavailable', 'The database is not answering; retry shortly (GET /healthz shows when it is back).')
    : undefined;
