import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { ServiceError } from '../errors.ts';

/** Checks a webhook body against the trigger's optional `webhookSchema` (JSON Schema as JSON text). */

// Built at the first workflow with a webhookSchema, not at start.
let ajv: Ajv | undefined;
const compiled = new Map<string, ValidateFunction>();

function validatorFor(schemaText: string): ValidateFunction {
  let validate = compiled.get(schemaText);
  if (!validate) {
    let schema: unknown;
    try {
      schema = JSON.parse(schemaText);
      validate = (ajv ??= new Ajv({ allErrors: true, strict: false })).compile(schema as object);
    } catch (error) {
      throw new ServiceError(
        409,
        'invalid_webhook_schema',
        `The workflow's webhookSchema is not a usable JSON Schema: ${error instanceof Error ? error.message : error}. Fix it with update_workflow.`,
      );
    }
    compiled.set(schemaText, validate);
  }
  return validate;
}

const describe = (e: ErrorObject) =>
  `${e.instancePath || '(body)'} ${e.message ?? 'is invalid'}${e.params && 'additionalProperty' in e.params ? `: ${String(e.params.additionalProperty)}` : ''}`;

export function assertMatchesWebhookSchema(schemaText: unknown, body: unknown): void {
  if (typeof schemaText !== 'string' || schemaText.trim() === '') return;
  const validate = validatorFor(schemaText);
  if (!validate(body)) {
    const issues = (validate.errors ?? []).map((e) => ({ path: e.instancePath || '(body)', message: e.message ?? 'invalid', code: e.keyword }));
    throw new ServiceError(
      400,
      'invalid_input',
      `The webhook body does not match the workflow's webhookSchema: ${(validate.errors ?? []).map(describe).join('; ')}`,
      { issues },
    );
  }
}
