import { hint } from './fields.ts';
import type { FieldMap, TriggerDefinition } from './types.ts';

/** Trigger types (Pascal case). Every workflow has exactly one trigger node. */

/** What every trigger returns; fields of the execution `input` are spread next to these. */
const fired: FieldMap = {
  triggered: 'boolean',
  triggeredAt: 'string (ISO 8601 timestamp)',
  timestamp: 'number (Unix time in milliseconds)',
};

export const triggers: readonly TriggerDefinition[] = [
  {
    triggerType: 'Manual',
    label: 'Manual',
    description:
      "Starts when the workflow is executed through the API or MCP (execute_workflow). Each field of the execution input object is spread into this node's output.",
    requiredFields: {},
    optionalFields: {},
    outputFields: fired,
    exampleConfig: { triggerType: 'Manual' },
  },
  {
    triggerType: 'Schedule',
    label: 'Schedule',
    description: 'Starts on a cron schedule. Check an expression with validate_cron before saving.',
    requiredFields: { scheduleCron: 'string (5-field cron expression, e.g. "*/15 * * * *")' },
    optionalFields: { scheduleTimezone: 'string (IANA time zone, e.g. "Europe/Berlin"; default UTC)' },
    outputFields: fired,
    exampleConfig: { triggerType: 'Schedule', scheduleCron: '0 9 * * 1-5', scheduleTimezone: 'UTC' },
  },
  {
    triggerType: 'Webhook',
    label: 'Webhook',
    description: 'Starts on POST /api/workflows/{workflowId}/webhook, authenticated with a user (wfb_) API key; the request is available to later nodes.',
    requiredFields: {},
    optionalFields: { webhookSchema: 'string (JSON Schema of the expected body, as JSON text)' },
    outputFields: {
      ...fired,
      body: 'object (parsed JSON request body)',
      headers: 'object (request headers)',
      method: 'string',
      query: 'object (query-string parameters)',
    },
  },
  {
    triggerType: 'Event',
    label: 'Contract Event',
    description: 'Starts once for each log of the named event emitted by the contract, from the block after the trigger is saved on.',
    requiredFields: {
      network: hint.network,
      contractAddress: 'string (0x address of the emitting contract)',
      contractABI: 'string (JSON-encoded ABI array containing the event)',
      eventName: 'string (event name, e.g. "Transfer")',
    },
    optionalFields: {},
    outputFields: {
      ...fired,
      eventName: 'string',
      args: 'object (decoded event arguments keyed by name)',
      blockNumber: 'number',
      transactionHash: 'string',
      address: 'string (emitting contract)',
      logIndex: 'number',
      transactionLink: 'string (explorer URL, when the chain has one)',
      addressLink: 'string (explorer URL, when the chain has one)',
    },
  },
  {
    triggerType: 'Block',
    label: 'Block',
    description: 'Starts for every new block whose number is a multiple of blockInterval (1: every block).',
    requiredFields: {
      network: hint.network,
      blockInterval: 'number (whole number > 0: runs on blocks whose number is a multiple of it, e.g. 100)',
    },
    optionalFields: {},
    outputFields: {
      ...fired,
      blockNumber: 'number',
      blockHash: 'string',
      blockTimestamp: 'number (Unix seconds)',
      parentHash: 'string',
    },
  },
  {
    triggerType: 'Transfer',
    label: 'Transfer',
    description:
      'Starts when the address sends or receives native value in a transaction (value moved by contract calls inside a transaction is not seen), or, with tokenAddress, on each Transfer log of that ERC-20 from or to it.',
    requiredFields: {
      network: hint.network,
      address: 'string (0x address to watch)',
    },
    optionalFields: { tokenAddress: 'string (0x ERC-20 address; omit to watch native transfers)' },
    outputFields: {
      ...fired,
      from: 'string (0x address)',
      to: 'string (0x address)',
      value: 'string (raw integer units)',
      token: 'string (ERC-20 address, or "native")',
      transactionHash: 'string',
    },
  },
];
