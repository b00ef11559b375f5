import type { AnyTool } from './define.ts';
import { inputJsonSchema } from './json-schema.ts';
import { ServiceError } from '../src/errors.ts';
import { suggest } from '../src/text/suggest.ts';

/**
 * Names a call gives that its operation does not take, refused with a
 * "did you mean" rather than dropped: a REST transfer with `tokenAdress`
 * sent the native coin instead of the token. Both edges ask this after the
 * caller is known to be allowed the operation, so its field names are told
 * only to those who may use it. An input schema that is open (a webhook's
 * free-form body, a workflow's call inputs) takes any name.
 */

interface Declared {
  names: string[];
  open: boolean;
}
const declaredByTool = new WeakMap<AnyTool, Declared>();

function declaredOf(tool: AnyTool): Declared {
  let declared = declaredByTool.get(tool);
  if (!declared) {
    const schema = inputJsonSchema(tool) as { properties?: Record<string, unknown>; additionalProperties?: unknown };
    declared = {
      names: Object.keys(schema.properties ?? {}),
      open: schema.additionalProperties !== undefined && schema.additionalProperties !== false,
    };
    declaredByTool.set(tool, declared);
  }
  return declared;
}

/** Whether the operation's input schema names `field`. */
export const declaresField = (tool: AnyTool, field: string) => declaredOf(tool).names.includes(field);

export function unknownFields(tool: AnyTool, input: Record<string, unknown>, noun: 'argument' | 'field'): ServiceError | undefined {
  const { names, open } = declaredOf(tool);
  if (open) return undefined;
  const unknown = Object.keys(input).filter((key) => !names.includes(key) && !tool.accepts?.includes(key));
  if (unknown.length === 0) return undefined;
  const issues = unknown.map((key) => {
    // REST sends the key as a header; say so rather than guess at another field.
    if (key === 'idempotency_key' && tool.rest?.idempotencyKey) {
      return { path: key, code: 'unrecognized_keys', message: 'send it as the Idempotency-Key header' };
    }
    const guess = suggest(key, names) ?? suggest(key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase(), names);
    return {
      path: key,
      code: 'unrecognized_keys',
      message: `unknown ${noun}${guess ? `; did you mean "${guess}"?` : ''}`,
      ...(guess ? { suggestion: guess } : {}),
    };
  });
  const plural = unknown.length > 1 ? 's' : '';
  const takes = names.length > 0 ? ` ${tool.name} takes: ${names.join(', ')}.` : ` ${tool.name} takes no ${noun}s.`;
  const listed = issues.map(
    (i) => `"${i.path}"${'suggestion' in i ? ` (did you mean "${i.suggestion}"?)` : i.message.startsWith('send') ? ` (${i.message})` : ''}`,
  );
  return new ServiceError(400, 'invalid_input', `Unknown ${noun}${plural} for ${tool.name}: ${listed.join(', ')}.${takes}`, { issues });
}
