import type { AnyTool, Principal, ToolContext } from '../../tools/define.ts';
import { canUse } from '../../tools/authorize.ts';
import { unknownFields } from '../../tools/unknown-fields.ts';
import { invokeTool } from '../../tools/invoke.ts';
import { compactInputJsonSchema, compactOutputJsonSchema } from '../../tools/json-schema.ts';
import { isServiceError, ServiceError } from '../errors.ts';
import type { McpCallResult, McpToolDescriptor, McpToolSet } from './sdk.ts';
import { suggest } from '../text/suggest.ts';
import { deepFreeze, onceForFrozen } from '../immutable.ts';
import { stringifyJson } from '../text/json-text.ts';

/** Registry entries as MCP tools for one caller: listed by scope, called through invokeTool. */

const descriptorCache = new WeakMap<AnyTool, McpToolDescriptor>();

export function toMcpDescriptor(tool: AnyTool): McpToolDescriptor {
  const cached = descriptorCache.get(tool);
  if (cached) return cached;
  if (!tool.mcp) throw new Error(`${tool.name} is not exposed over MCP`);
  // The compact schemas (tools/json-schema.ts) keep a full listing within an agent's context budget;
  // tools_documentation {toolName} answers the full ones. `title` is not repeated in annotations:
  // MCP clients read the tool's own title first. destructiveHint and idempotentHint mean something
  // only when readOnlyHint is false (MCP schema), so a read-only tool does not list them.
  const { destructiveHint, idempotentHint, ...hints } = tool.mcp.annotations;
  const descriptor: McpToolDescriptor = {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: compactInputJsonSchema(tool) as McpToolDescriptor['inputSchema'],
    ...(tool.mcp.outputSchema === false ? {} : { outputSchema: compactOutputJsonSchema(tool, tool.mcp.resultKey) as McpToolDescriptor['outputSchema'] }),
    annotations: hints.readOnlyHint ? hints : { ...tool.mcp.annotations },
  };
  descriptorCache.set(tool, descriptor);
  return descriptor;
}

/** A ServiceError that also says how it looks as an MCP result (a payment challenge: structured content and `_meta`). */
interface McpShapedError {
  mcp: { structuredContent: Record<string, unknown>; meta: Record<string, unknown> };
}
const hasMcpShape = (error: unknown): error is McpShapedError =>
  typeof error === 'object' && error !== null && 'mcp' in error && typeof (error as McpShapedError).mcp?.structuredContent === 'object';

/** The ServiceError behind an error result, for wrappers that re-shape it (the MPP error form) without re-parsing its text. */
const failures = new WeakMap<McpCallResult, ServiceError>();
export const serviceErrorOf = (result: McpCallResult): ServiceError | undefined => failures.get(result);

export function errorResult(error: unknown): McpCallResult {
  const body = isServiceError(error) ? error.toBody() : { error: 'The gateway failed to complete this call; it has been logged.', code: 'internal_error' };
  if (!isServiceError(error)) console.error('[flowgate] MCP tool failed:', error);
  const result: McpCallResult =
    isServiceError(error) && hasMcpShape(error)
      ? { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: error.mcp.structuredContent, _meta: error.mcp.meta }
      : { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
  if (isServiceError(error)) failures.set(result, error);
  return result;
}

/** MCP `_meta` keys that carry payment credentials (x402 and MPP conventions). */
const X402_PAYMENT_META = 'x402/payment';
const MPP_CREDENTIAL_META = 'org.paymentauth/credential';

function resultOf(tool: AnyTool, output: unknown): McpCallResult {
  const structured = tool.mcp && tool.mcp.resultKey ? { [tool.mcp.resultKey]: output } : (output as Record<string, unknown>);
  return { content: [{ type: 'text', text: stringifyJson(structured) }], structuredContent: structured };
}

const frozenResults = new WeakMap<AnyTool, (output: object) => McpCallResult>();
function frozenResultOf(tool: AnyTool) {
  let of = frozenResults.get(tool);
  if (!of) frozenResults.set(tool, (of = onceForFrozen((output: object, kept) => (kept ? deepFreeze(resultOf(tool, output)) : resultOf(tool, output)))));
  return of;
}

/**
 * Runs one registry tool for an MCP call: payment credentials in from `_meta`, receipts out to the result's `_meta`.
 * `context` is this call's own (a fresh one per call): the payment fields are added to it.
 */
export async function callRegistryTool(
  tool: AnyTool,
  args: Record<string, unknown>,
  meta: Record<string, unknown> | undefined,
  context: ToolContext,
): Promise<McpCallResult> {
  const resultMeta: Record<string, unknown> = {};
  try {
    // MCP arguments are snake_case where REST is camelCase, and an agent that mixes them up must hear so (tools/unknown-fields.ts).
    // After the scope check's verdict: a caller who may not use the tool learns nothing of its arguments.
    const unknown = canUse(context.principal, tool) ? unknownFields(tool, args, 'argument') : undefined;
    if (unknown) throw unknown;
    const payment = { x402: meta?.[X402_PAYMENT_META], mpp: meta?.[MPP_CREDENTIAL_META] };
    // Added to the call's own context rather than spread into a copy, which would resolve its lazy fields (the caller's IP).
    const output = await invokeTool(
      tool,
      args,
      Object.assign(context, { payment, setResultMeta: (key: string, value: unknown) => void (resultMeta[key] = value) }),
    );
    if (Object.keys(resultMeta).length > 0) return { ...resultOf(tool, output), _meta: resultMeta };
    // A deeply frozen output (a static list: tools/invoke.ts) has one result, built and serialized once.
    return typeof output === 'object' && output !== null ? frozenResultOf(tool)(output) : resultOf(tool, output);
  } catch (error) {
    return errorResult(error);
  }
}

/** The registry's MCP tools, by name, and each kind of caller's tools/list, computed once per registry. */
interface Exposed {
  byName: Map<string, AnyTool>;
  exposed: AnyTool[];
  lists: Map<string, McpToolDescriptor[]>;
}
const exposedByRegistry = new WeakMap<readonly AnyTool[], Exposed>();

function exposedTools(registry: readonly AnyTool[]): Exposed {
  let cached = exposedByRegistry.get(registry);
  if (!cached) {
    const exposed = registry.filter((t) => t.mcp);
    cached = { exposed, byName: new Map(exposed.map((t) => [t.name, t])), lists: new Map() };
    exposedByRegistry.set(registry, cached);
  }
  return cached;
}

/** Everything canUse reads of a caller: callers with the same key see the same tools. */
const callerKind = (principal: Principal | null) => (principal === null ? 'anonymous' : `${principal.kind}:${principal.scope ?? '*'}`);

/** The tools a caller may see and call, as listed (canUse decides; the list is kept per kind of caller). */
export function toolsFor(registry: readonly AnyTool[], principal: Principal | null): McpToolDescriptor[] {
  const { exposed, lists } = exposedTools(registry);
  const kind = callerKind(principal);
  let list = lists.get(kind);
  if (!list) {
    list = exposed.filter((t) => canUse(principal, t)).map(toMcpDescriptor);
    lists.set(kind, list);
  }
  return list;
}

/** `makeContext` returns a new context on every call: the call adds its own fields to it. */
export function createToolSet(registry: readonly AnyTool[], principal: Principal | null, makeContext: () => ToolContext): McpToolSet {
  return {
    list: () => toolsFor(registry, principal),
    async call(name, args, meta, progress) {
      const tool = exposedTools(registry).byName.get(name);
      if (!tool) {
        const suggestion = suggest(
          name,
          toolsFor(registry, principal).map((t) => t.name),
        );
        return errorResult(
          new ServiceError(
            404,
            'unknown_tool',
            `Unknown tool "${name}".${suggestion ? ` Did you mean "${suggestion}"?` : ''} Call tools/list for the tools available to you.`,
          ),
        );
      }
      // An `idempotency_key` argument is read by invokeTool, which applies the one rule (parseIdempotencyKey) to it.
      return callRegistryTool(tool, args, meta, Object.assign(makeContext(), { notifyProgress: progress }));
    },
  };
}
