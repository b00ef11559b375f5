import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import { egressVerdict, type EgressAllowList } from './egress-policy.ts';

/**
 * A dns.lookup for sockets that drops the addresses the egress policy refuses
 * and fails (with the caller's error) when none is left. Used as the socket's
 * own `lookup`, it judges the address actually connected to, so a name that
 * re-resolves between a check and the connect (DNS rebinding) is still caught.
 */
export function policyLookup(
  allowList: EgressAllowList,
  port: number,
  errors: { noAddress(hostname: string): Error; refused(hostname: string, ip: string, range: string): Error },
): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '');
      if (addresses.length === 0) return callback(errors.noAddress(hostname), '');
      const usable = addresses.filter((a) => egressVerdict(a.address, hostname, port, allowList).allowed);
      if (usable.length === 0) {
        const verdict = egressVerdict(addresses[0].address, hostname, port, allowList);
        return callback(errors.refused(hostname, addresses[0].address, verdict.allowed ? 'refused' : verdict.range), '');
      }
      if (options.all) callback(null, usable);
      else callback(null, usable[0].address, usable[0].family);
    });
  };
}
