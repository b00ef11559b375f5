import { getAddress, isAddress, type AbiEvent, type Address } from 'viem';
import type { ChainCatalog } from '../../chains/catalog.ts';
import { isServiceError } from '../../errors.ts';
import { bareName } from '../config-checks.ts';
import { isRecord } from '../../is-record.ts';
import { chainOf, isBlank } from '../../onchain/steps/config.ts';

/**
 * What an Event, Block or Transfer trigger watches, read from its node config.
 * One reader serves both the save-time checks (its problems) and the watcher
 * (its spec), so what is refused at save and what is watched cannot drift.
 *
 * Missing fields, mistyped values, an unparsable ABI or an event the ABI
 * lacks are reported by the generic registry checks (config-checks.ts, with
 * "did you mean"); here they only mean "no spec". Problems returned are the
 * ones only a chain trigger has: the chain, the addresses, the interval.
 */

export const CHAIN_TRIGGER_TYPES = ['Event', 'Block', 'Transfer'] as const;
export type ChainTriggerType = (typeof CHAIN_TRIGGER_TYPES)[number];
export const isChainTriggerType = (value: unknown): value is ChainTriggerType => (CHAIN_TRIGGER_TYPES as readonly unknown[]).includes(value);

export type ChainTriggerSpec =
  | { triggerType: 'Event'; chainId: number; contractAddress: Address; eventName: string; events: AbiEvent[] }
  | { triggerType: 'Block'; chainId: number; blockInterval: number }
  /** tokenAddress null: native transfers. */
  | { triggerType: 'Transfer'; chainId: number; address: Address; tokenAddress: Address | null };

export interface TriggerFieldProblem {
  field: string;
  code: string;
  message: string;
  received?: unknown;
  suggestion?: string;
}

const isTemplated = (value: unknown) => typeof value === 'string' && value.includes('{{');

/** Triggers have no upstream node: their fields must be literal when the watcher reads them. */
const templateProblem = (field: string, value: unknown): TriggerFieldProblem => ({
  field,
  code: 'template_not_allowed',
  received: value,
  message: `${field} of a chain trigger cannot hold a template: the chain is watched before any node runs. Give the literal value.`,
});

/** undefined: reported here or by the generic checks. */
function readAddress(config: Record<string, unknown>, field: string, problems: TriggerFieldProblem[]): Address | undefined {
  const value = config[field];
  if (typeof value !== 'string' || isBlank(value)) return undefined;
  if (isTemplated(value)) return void problems.push(templateProblem(field, value));
  const text = value.trim();
  if (isAddress(text)) return getAddress(text);
  problems.push({
    field,
    code: 'invalid_address',
    received: value,
    message: isAddress(text, { strict: false })
      ? `${field} ${JSON.stringify(value)} has a bad EIP-55 checksum (mixed case that does not match); send it all lowercase or in its exact checksummed form.`
      : `${field} must be a 0x-prefixed 20-byte hex address; got ${JSON.stringify(value)}.`,
  });
  return undefined;
}

function readChain(config: Record<string, unknown>, chains: ChainCatalog | undefined, problems: TriggerFieldProblem[]): number | undefined {
  const network = config.network;
  if (isBlank(network) || (typeof network !== 'string' && typeof network !== 'number')) return undefined;
  if (isTemplated(network)) return void problems.push(templateProblem('network', network));
  if (!chains) return undefined;
  try {
    // The same resolver web3 steps use: a chain id or name, enabled, EVM.
    return chainOf({ services: { chains } }, config).chainId;
  } catch (error) {
    if (!isServiceError(error)) throw error;
    const suggestion = typeof error.details.suggestion === 'string' ? error.details.suggestion : undefined;
    problems.push({ field: 'network', code: error.code, received: network, message: error.message, suggestion });
    return undefined;
  }
}

/** A positive whole number; values the generic number check already refuses are left to it. */
function readInterval(config: Record<string, unknown>, problems: TriggerFieldProblem[]): number | undefined {
  const value = config.blockInterval;
  if (isBlank(value)) return undefined;
  if (isTemplated(value)) return void problems.push(templateProblem('blockInterval', value));
  const numeric = typeof value === 'number' || (typeof value === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(value));
  if (!numeric) return undefined;
  const n = Number(value);
  if (Number.isSafeInteger(n) && n > 0) return n;
  problems.push({
    field: 'blockInterval',
    code: 'invalid_block_interval',
    received: value,
    message: `blockInterval must be a whole number of blocks greater than 0 (the trigger fires on every block whose number is a multiple of it); got ${JSON.stringify(value)}.`,
  });
  return undefined;
}

/**
 * Bounds on what one Event trigger keeps: the watcher decodes every log with
 * these fragments, and the cursor row holding them is read whenever the
 * trigger is polled. Unbounded, one event name with hundreds of overloads made
 * each row ~200 KB (the node config's 256 KB was the only limit). A real
 * contract has a handful of overloads of a name and fragments of a few hundred
 * characters.
 */
export const MAX_EVENT_OVERLOADS = 16;
export const MAX_WATCHED_EVENTS_CHARS = 16_384;

/** An event fragment reduced to what topic hashing and log decoding read (no internalType, no extra keys). */
interface EventParam {
  name?: string;
  type: string;
  indexed?: boolean;
  components?: EventParam[];
}

function compactParam(param: Record<string, unknown>): EventParam {
  return {
    ...(typeof param.name === 'string' ? { name: param.name } : {}),
    type: String(param.type),
    ...(param.indexed === true ? { indexed: true } : {}),
    ...(Array.isArray(param.components) ? { components: param.components.filter(isRecord).map(compactParam) } : {}),
  };
}

export function compactEvent(event: Record<string, unknown>): AbiEvent {
  const inputs = Array.isArray(event.inputs) ? event.inputs.filter(isRecord).map(compactParam) : [];
  return { type: 'event', name: String(event.name), inputs, ...(event.anonymous === true ? { anonymous: true } : {}) } as AbiEvent;
}

/** The ABI's events named eventName (overloads included), compacted; empty when the generic checks report a problem. */
function readEvents(config: Record<string, unknown>): AbiEvent[] {
  const { contractABI, eventName } = config;
  if (typeof contractABI !== 'string' || typeof eventName !== 'string' || isTemplated(contractABI) || isBlank(eventName)) return [];
  let abi: unknown;
  try {
    abi = JSON.parse(contractABI);
  } catch {
    return [];
  }
  if (!Array.isArray(abi)) return [];
  const wanted = bareName(eventName);
  return abi.filter((item) => isRecord(item) && item.type === 'event' && item.name === wanted && Array.isArray(item.inputs)).map(compactEvent);
}

function eventBoundProblem(config: Record<string, unknown>, events: AbiEvent[]): TriggerFieldProblem | undefined {
  const name = events[0]?.name;
  if (events.length > MAX_EVENT_OVERLOADS) {
    return {
      field: 'eventName',
      code: 'too_many_event_overloads',
      received: config.eventName,
      message: `contractABI has ${events.length} events named ${JSON.stringify(name)}; an Event trigger watches at most ${MAX_EVENT_OVERLOADS} overloads of one name. Keep in contractABI only the overloads the contract emits.`,
    };
  }
  const chars = JSON.stringify(events).length;
  if (chars > MAX_WATCHED_EVENTS_CHARS) {
    return {
      field: 'contractABI',
      code: 'event_abi_too_large',
      message: `The events named ${JSON.stringify(name)} in contractABI take ${chars} characters once reduced to names, types and indexed flags; an Event trigger keeps at most ${MAX_WATCHED_EVENTS_CHARS}. Keep in contractABI only the overloads the contract emits.`,
    };
  }
  return undefined;
}

/**
 * The spec of a chain trigger config, plus the problems only a chain trigger
 * has. Without `chains` the network is not resolved (no spec, no problem).
 */
export function readChainTrigger(config: Record<string, unknown>, chains?: ChainCatalog): { spec?: ChainTriggerSpec; problems: TriggerFieldProblem[] } {
  const problems: TriggerFieldProblem[] = [];
  const triggerType = config.triggerType;
  if (!isChainTriggerType(triggerType)) return { problems };
  const chainId = readChain(config, chains, problems);
  let spec: ChainTriggerSpec | undefined;
  if (triggerType === 'Event') {
    const contractAddress = readAddress(config, 'contractAddress', problems);
    const events = readEvents(config);
    const bound = eventBoundProblem(config, events);
    if (bound) problems.push(bound);
    if (chainId !== undefined && contractAddress && events.length > 0) {
      spec = { triggerType, chainId, contractAddress, eventName: events[0].name, events };
    }
  } else if (triggerType === 'Block') {
    const blockInterval = readInterval(config, problems);
    if (chainId !== undefined && blockInterval !== undefined) spec = { triggerType, chainId, blockInterval };
  } else {
    const address = readAddress(config, 'address', problems);
    const tokenAddress = isBlank(config.tokenAddress) ? null : readAddress(config, 'tokenAddress', problems);
    if (chainId !== undefined && address && tokenAddress !== undefined) spec = { triggerType, chainId, address, tokenAddress };
  }
  return { spec: problems.length === 0 ? spec : undefined, problems };
}
