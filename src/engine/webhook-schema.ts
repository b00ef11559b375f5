import type { ErrorObject, Options } from 'ajv';
import { ServiceError } from '../errors.ts';
import { checkWithinBudget, compileSchema, compileTenantSchema, reportedErrors, ValidatorCache, type TenantValidator } from './tenant-schema.ts';

/** Checks a webhook body against the trigger's optional `webhookSchema` (JSON Schema as JSON text), within tenant-schema.ts's bounds. */
const webhookOptions: Options = { allErrors: true, strict: false };
const compiled = new ValidatorCache(500, 4 * 1024 * 1024);

/** Test-only view of the cache. */
export const webhookValidatorCount = () => compiled.size;

/** Why a webhookSchema text cannot be used (it does not parse, or compileSchema refuses it); undefined when it can. Compiles in a throwaway Ajv. */
export function webhookSchemaProblem(schemaText: string): string | undefined {
  try {
    const schema: unknown = JSON.parse(schemaText);
    if (typeof schema !== 'object' || schema === null) return 'it is not a JSON object';
    compileSchema(schema, webhookOptions, 'webhookSchema');
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

function validatorFor(schemaText: string): TenantValidator {
  return compiled.get(schemaText, () => {
    try {
      return compileTenantSchema(JSON.parse(schemaText) as object, webhookOptions, 'webhookSchema');
    } catch (error) {
      throw new ServiceError(
        409,
        'invalid_webhook_schema',
        `The workflow's webhookSchema is not a usable JSON Schema: ${error instanceof Error ? error.message : error}. Fix it with update_workflow.`,
      );
    }
  });
}

const describe = (e: ErrorObject) =>
  `${e.instancePath || '(body)'} ${e.message ?? 'is invalid'}${e.params && 'additionalProperty' in e.params ? `: ${String(e.params.additionalProperty)}` : ''}`;

export function assertMatchesWebhookSchema(schemaText: unknown, body: unknown): void {
  if (typeof schemaText !== 'string' || schemaText.trim() === '') return;
  const validator = validatorFor(schemaText);
  const checked = checkWithinBudget(validator, body, {
    prefix: "The webhook body cannot be checked against the workflow's webhookSchema",
    schema: () => JSON.parse(schemaText) as unknown,
  });
  if (!checked.valid) {
    const { shown, more } = reportedErrors(checked.errors);
    const issues = shown.map((e) => ({ path: e.instancePath || '(body)', message: e.message ?? 'invalid', code: e.keyword }));
    throw new ServiceError(400, 'invalid_input', `The webhook body does not match the workflow's webhookSchema: ${shown.map(describe).join('; ')}${more}`, {
      issues,
    });
  }
}
