import { BaseError, getAddress, type AbiEvent, type Address, type PublicClient } from 'viem';
import { badRequest } from '../../errors.ts';
import { jsonSafe } from '../json-safe.ts';
import { parseAbiDocument, parseEvmAddress } from '../money-inputs.ts';
import { chainOf, isBlank, requireString } from './config.ts';
import type { Web3Step } from './types.ts';

/**
 * `web3/query-events`: past logs of one contract event, decoded by viem
 * (getLogs with the event ABI). The range is `fromBlock`..`toBlock` (default
 * latest) or the latest `blockCount` blocks; it is read in pages, and a page
 * the RPC refuses as too large (most hosted RPCs cap the block range or the
 * result count of eth_getLogs) is halved and read again. `eventArgs`
 * filters on indexed parameters (an array value matches any of its items).
 */

export const QUERY_EVENTS_LIMITS = {
  /** First page size; hosted RPCs commonly allow 2,000 to 10,000 blocks. */
  pageBlocks: 2_000,
  /** Largest range one step may read. */
  maxBlocks: 100_000,
  /** Events returned; past it the output says `truncated` and where to go on. */
  maxEvents: 1_000,
} as const;

/** Messages hosted RPCs use when an eth_getLogs range or result set is too large. */
const RANGE_REFUSAL =
  /block range|range (is )?too (large|wide|big)|limited to|exceed|more than \d+ (results|logs)|too many (logs|results|blocks)|response size|query timeout/i;

function isRangeRefusal(error: unknown): boolean {
  if (!(error instanceof BaseError)) return false;
  return Boolean(error.walk((e) => RANGE_REFUSAL.test(`${(e as BaseError).shortMessage ?? ''} ${(e as BaseError).details ?? ''} ${(e as Error).message}`)));
}

function blockNumber(config: Record<string, unknown>, field: string): bigint | undefined {
  const value = config[field];
  if (isBlank(value)) return undefined;
  const text = String(value).trim();
  if (/^\d+$/.test(text)) return BigInt(text);
  if (/^0x[0-9a-f]+$/i.test(text)) return BigInt(text);
  throw badRequest(
    'invalid_config',
    `${field} must be a block number (decimal or 0x hex)${field === 'toBlock' ? ' or "latest"' : ''}; got ${JSON.stringify(value)}.`,
    {
      field,
      received: value,
    },
  );
}

function eventsOf(config: Record<string, unknown>): AbiEvent[] {
  const abi = parseAbiDocument(config.abi);
  const name = requireString(config, 'eventName', 'the event name from the ABI, e.g. "Transfer"').replace(/\(.*$/, '');
  const events = abi.filter((e): e is AbiEvent => e.type === 'event' && e.name === name);
  if (events.length === 0) {
    const names = abi.filter((e): e is AbiEvent => e.type === 'event').map((e) => e.name);
    throw badRequest('invalid_config', `The ABI has no event named "${name}"${names.length ? `; it has ${names.join(', ')}` : ''}.`, {
      field: 'eventName',
      received: config.eventName,
    });
  }
  return events;
}

/** `eventArgs`: a JSON object (or object) of indexed parameter names to a value or an array of values. */
function argsFilter(config: Record<string, unknown>, events: AbiEvent[]): Record<string, unknown> | undefined {
  if (isBlank(config.eventArgs)) return undefined;
  let args: unknown = config.eventArgs;
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      throw badRequest('invalid_json_field', 'eventArgs is not valid JSON: give an object such as {"from":"0x..."}.', { field: 'eventArgs' });
    }
  }
  if (!args || typeof args !== 'object' || Array.isArray(args)) {
    throw badRequest('invalid_config', 'eventArgs must be a JSON object of indexed parameter names to values, e.g. {"from":"0x..."}.', { field: 'eventArgs' });
  }
  if (events.length > 1) throw badRequest('invalid_config', `eventArgs cannot filter the overloaded event "${events[0]!.name}".`, { field: 'eventArgs' });
  const indexed = events[0]!.inputs.filter((i) => i.indexed && i.name).map((i) => i.name!);
  const unknown = Object.keys(args).filter((k) => !indexed.includes(k));
  if (unknown.length) {
    throw badRequest(
      'invalid_config',
      `eventArgs can only filter indexed parameters of ${events[0]!.name} (${indexed.join(', ') || 'none'}); not ${unknown.join(', ')}.`,
      { field: 'eventArgs' },
    );
  }
  return args as Record<string, unknown>;
}

interface Range {
  from: bigint;
  to: bigint;
}

async function rangeOf(client: PublicClient, config: Record<string, unknown>): Promise<Range> {
  const latest = await client.getBlockNumber({ cacheTime: 0 });
  const toText = isBlank(config.toBlock) ? 'latest' : String(config.toBlock).trim().toLowerCase();
  const to = toText === 'latest' ? latest : blockNumber(config, 'toBlock')!;
  let from = blockNumber(config, 'fromBlock');
  const countValue = isBlank(config.blockCount) ? config.lastNBlocks : config.blockCount;
  if (from === undefined && !isBlank(countValue)) {
    const count = Number(countValue);
    if (!Number.isSafeInteger(count) || count < 1) {
      throw badRequest('invalid_config', `blockCount must be a whole number of blocks, at least 1; got ${JSON.stringify(countValue)}.`, {
        field: 'blockCount',
      });
    }
    from = to - BigInt(count) + 1n < 0n ? 0n : to - BigInt(count) + 1n;
  }
  if (from === undefined) {
    throw badRequest('invalid_config', 'Give the range to search: fromBlock (and optionally toBlock), or blockCount for the latest blocks.', {
      field: 'fromBlock',
    });
  }
  if (to > latest) throw badRequest('invalid_config', `toBlock ${to} is past the chain head (${latest}).`, { field: 'toBlock', received: config.toBlock });
  if (from > to) throw badRequest('invalid_config', `fromBlock ${from} is after toBlock ${to}.`, { field: 'fromBlock', received: config.fromBlock });
  if (to - from + 1n > BigInt(QUERY_EVENTS_LIMITS.maxBlocks)) {
    throw badRequest(
      'invalid_config',
      `The range ${from}..${to} spans ${to - from + 1n} blocks; one step reads at most ${QUERY_EVENTS_LIMITS.maxBlocks}. Split it across steps.`,
      { field: 'fromBlock' },
    );
  }
  return { from, to };
}

export const queryEvents: Web3Step = {
  kind: 'read',
  async read(config, env) {
    const chain = chainOf(env, config);
    const address: Address = parseEvmAddress(config.contractAddress, 'contractAddress');
    const events = eventsOf(config);
    const args = argsFilter(config, events);
    const client = env.services.chainClients.publicClient(chain.chainId) as PublicClient;
    const range = await rangeOf(client, config);

    const found: Record<string, unknown>[] = [];
    let page = BigInt(QUERY_EVENTS_LIMITS.pageBlocks);
    let cursor = range.from;
    let pages = 0;
    while (cursor <= range.to && found.length < QUERY_EVENTS_LIMITS.maxEvents) {
      const end = cursor + page - 1n > range.to ? range.to : cursor + page - 1n;
      let logs;
      try {
        logs = await client.getLogs({
          address,
          ...(args ? { event: events[0]!, args } : { events }),
          fromBlock: cursor,
          toBlock: end,
          strict: false,
        } as Parameters<PublicClient['getLogs']>[0]);
      } catch (error) {
        // Refused as too large: read the same start again with half the blocks.
        if (isRangeRefusal(error) && page > 1n) {
          page /= 2n;
          continue;
        }
        throw error;
      }
      pages++;
      for (const log of logs) {
        if (log.blockNumber === null || log.transactionHash === null || log.logIndex === null) continue; // pending
        found.push({
          eventName: (log as { eventName?: string }).eventName ?? events[0]!.name,
          args: jsonSafe((log as { args?: unknown }).args ?? {}),
          blockNumber: Number(log.blockNumber),
          transactionHash: log.transactionHash,
          logIndex: log.logIndex,
          address: getAddress(log.address),
        });
      }
      cursor = end + 1n;
    }
    // Over the cap: stop before the first block not returned whole, so nextFromBlock loses nothing.
    let next: number | undefined;
    let kept = found;
    if (found.length > QUERY_EVENTS_LIMITS.maxEvents) {
      next = found[QUERY_EVENTS_LIMITS.maxEvents]!.blockNumber as number;
      kept = found.filter((e) => (e.blockNumber as number) < next!);
      if (kept.length === 0) kept = found.slice(0, QUERY_EVENTS_LIMITS.maxEvents);
    } else if (cursor <= range.to) {
      next = Number(cursor);
    }
    return {
      events: kept,
      count: kept.length,
      fromBlock: Number(range.from),
      toBlock: Number(range.to),
      pages,
      ...(next !== undefined ? { truncated: true, nextFromBlock: next } : {}),
    };
  },
};
