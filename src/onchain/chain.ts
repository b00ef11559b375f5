import { resolveChainOrThrow, type ChainEntry } from '../chains/catalog.ts';
import { badRequest, ServiceError } from '../errors.ts';
import type { Services } from '../services.ts';

/** A chain from `chainId` (canonical) or the deprecated `network` alias; `chainId` wins. */
export function selectChain(services: Pick<Services, 'chains'>, chainId: unknown, network: unknown): ChainEntry {
  const ref = chainId ?? network;
  if (ref === undefined || ref === null || ref === '')
    throw badRequest('invalid_input', 'chainId is required: a numeric chain id such as 8453 (see GET /api/chains).', { field: 'chainId' });
  if (typeof ref !== 'string' && typeof ref !== 'number')
    throw badRequest('invalid_input', `chainId must be a number or numeric string (got ${typeof ref}).`, { field: 'chainId' });
  if (chainId !== undefined && chainId !== null && chainId !== '' && !/^\d+$/.test(String(chainId).trim())) {
    throw badRequest(
      'unsupported_chain',
      `chainId must be numeric (got ${JSON.stringify(chainId)}); chain names are accepted only in the deprecated network field.`,
      { field: 'chainId' },
    );
  }
  const chain = resolveChainOrThrow(services.chains, ref);
  if (!chain.isEnabled)
    throw badRequest('chain_disabled', `Chain ${chain.name} (${chain.chainId}) is not enabled on this gateway.`, { chainId: chain.chainId });
  if (chain.chainType !== 'evm') {
    throw new ServiceError(
      400,
      'unsupported_chain',
      `Direct execution on ${chain.name} (${chain.chainId}) is not available on this gateway yet; use an EVM chain.`,
      { chainId: chain.chainId },
    );
  }
  return chain;
}
