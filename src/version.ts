/** Versions the gateway reports. The REST surface is version 1 (SPEC Versioning). */
export const GATEWAY_VERSION = '0.1.0';
export const SUPPORTED_API_VERSIONS = ['1'] as const;
export const DESCRIPTION_VERSION = '1.0.0';
