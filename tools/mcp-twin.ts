import { z } from 'zod';
import { defineTool, type AnyTool, type McpBinding, type ToolDefinition, type TwinDeclaration, type TwinFields } from './define.ts';

/**
 * MCP twins of REST operations. An operation's input is stated once, as the
 * REST entry's camelCase zod object; its MCP tool (snake_case arguments, as
 * agents expect them) is generated here: the same field schemas under the
 * declared names, nested objects included, and a mapping of the arguments
 * back to the REST input, so both transports run the one handler.
 *
 * Every REST field is either renamed or declared REST-only, so a field added
 * to the REST input cannot silently miss its twin (start-up error), and
 * test/mcp-rest-parity.test.ts holds every twin to its declaration.
 */

export interface TwinSpec {
  name: string;
  title: string;
  description: string;
  mcp: McpBinding;
  /** REST field → MCP argument; every REST field not listed must be in `restOnly`. */
  fields: TwinFields;
  /** REST fields the MCP tool does not take (the deprecated `network`, the `abiFunction` alias). */
  restOnly?: readonly string[];
  /** REST-optional fields (REST names) the MCP tool requires: chainId, whose REST alternative `network` is REST-only. */
  require?: readonly string[];
  /** Arguments only MCP takes, read by the edge rather than the handler (idempotency_key: REST sends a header). */
  mcpOnly?: z.ZodRawShape;
  /** The REST body's free-form fields, which MCP takes as this one object argument (call_workflow's `inputs`). */
  catchall?: { as: string; schema: z.ZodType<Record<string, unknown>> };
}

const objectOf = (schema: z.ZodType, where: string): z.ZodObject => {
  if (!(schema instanceof z.ZodObject)) throw new Error(`${where}: an MCP twin needs a plain zod object input`);
  return schema;
};

/** A description that names REST fields, with each name replaced by its MCP argument name. */
function renameWords(text: string, names: Map<string, string>): string {
  return text.replace(/\b[a-z][A-Za-z0-9]*\b/g, (word) => names.get(word) ?? word);
}

function allNames(fields: TwinFields, into = new Map<string, string>()): Map<string, string> {
  for (const [key, rename] of Object.entries(fields)) {
    if (typeof rename === 'string') into.set(key, rename);
    else (into.set(key, rename.as), allNames(rename.fields, into));
  }
  return into;
}

function twinShape(
  object: z.ZodObject,
  fields: TwinFields,
  restOnly: readonly string[],
  names: Map<string, string>,
  where: string,
  require: readonly string[] = [],
) {
  const missing = Object.keys(object.shape).filter((key) => !(key in fields) && !restOnly.includes(key));
  if (missing.length > 0) throw new Error(`${where}: REST fields ${missing.join(', ')} have no MCP name and are not declared REST-only`);
  const stale = restOnly.filter((key) => !(key in object.shape));
  if (stale.length > 0) throw new Error(`${where}: ${stale.join(', ')} declared REST-only but not REST fields`);
  const shape: Record<string, z.ZodType> = {};
  for (const [key, rename] of Object.entries(fields)) {
    let field = object.shape[key] as z.ZodType | undefined;
    if (!field) throw new Error(`${where}: ${key} is not a REST field`);
    const description = field.description;
    if (require.includes(key) && field instanceof z.ZodOptional) field = field.unwrap() as z.ZodType;
    if (typeof rename !== 'string') {
      const optional = field instanceof z.ZodOptional;
      const inner = objectOf(optional ? ((field as z.ZodOptional).unwrap() as z.ZodType) : field, `${where}.${key}`);
      field = z.object(twinShape(inner, rename.fields, rename.restOnly ?? [], names, `${where}.${key}`));
      if (optional) field = field.optional();
    }
    shape[typeof rename === 'string' ? rename : rename.as] = description ? field.describe(renameWords(description, names)) : field;
  }
  return shape;
}

/** MCP arguments (parsed) back to the REST input: renamed keys, nested objects included; MCP-only arguments dropped. */
function toRestInput(args: Record<string, unknown>, fields: TwinFields): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const [key, rename] of Object.entries(fields)) {
    const name = typeof rename === 'string' ? rename : rename.as;
    if (!Object.hasOwn(args, name)) continue;
    const value = args[name];
    input[key] =
      typeof rename === 'string' || value === null || typeof value !== 'object' ? value : toRestInput(value as Record<string, unknown>, rename.fields);
  }
  return input;
}

/** The MCP twin of a REST entry: same input (renamed), output, scope, rate limit and handler. */
export function mcpTwin(rest: AnyTool, spec: TwinSpec): AnyTool {
  const where = `MCP twin ${spec.name} of ${rest.name}`;
  const object = objectOf(rest.input, where);
  const restOnly = spec.restOnly ?? [];
  const names = allNames(spec.fields);
  const shape = {
    ...twinShape(object, spec.fields, restOnly, names, where, spec.require),
    ...(spec.catchall ? { [spec.catchall.as]: spec.catchall.schema } : {}),
    ...spec.mcpOnly,
  };
  const twin: TwinDeclaration = {
    of: rest.name,
    fields: spec.fields,
    restOnly,
    mcpOnly: [...Object.keys(spec.mcpOnly ?? {}), ...(spec.catchall ? [spec.catchall.as] : [])],
    ...(spec.catchall ? { catchall: spec.catchall.as } : {}),
  };
  const definition: ToolDefinition = {
    name: spec.name,
    title: spec.title,
    description: spec.description,
    input: z.object(shape),
    output: rest.output,
    scope: rest.scope,
    ...(rest.anonymous ? { anonymous: true } : {}),
    ...(rest.rateLimit ? { rateLimit: rest.rateLimit } : {}),
    ...(rest.quotas ? { quotas: rest.quotas } : {}),
    mcp: spec.mcp,
    twin,
    handler(args, ctx) {
      const record = args as Record<string, unknown>;
      const extra = spec.catchall ? (record[spec.catchall.as] as Record<string, unknown>) : {};
      // The named fields win over free-form ones, as path parameters win over the body on REST.
      return rest.handler({ ...extra, ...toRestInput(record, spec.fields) }, ctx);
    },
  };
  return defineTool(definition);
}
