import type { RequestHandler } from 'express';
import { ServiceError } from '../errors.ts';
import { SUPPORTED_API_VERSIONS } from '../version.ts';

/** `Service-Version` pins a call to a REST version; absent means current (SPEC Versioning 1). */
export const serviceVersion: RequestHandler = (req, _res, next) => {
  const requested = req.headers['service-version'];
  if (requested === undefined) return next();
  const value = String(requested).trim();
  if ((SUPPORTED_API_VERSIONS as readonly string[]).includes(value)) return next();
  next(
    new ServiceError(
      400,
      'unsupported_version',
      `Unsupported Service-Version "${value}". Supported versions: ${SUPPORTED_API_VERSIONS.join(', ')}; omit the header for the current version.`,
      {
        supportedVersions: [...SUPPORTED_API_VERSIONS],
      },
    ),
  );
};
