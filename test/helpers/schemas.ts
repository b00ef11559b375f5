import fs from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';

/** Validators for the vendored card schemas in test/fixtures/schemas. */

const dir = path.resolve('test/fixtures/schemas');
const load = (file: string) => JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));

const isUri = (value: string) => {
  try {
    new URL(value);
    return true;
  } catch {
    return false;
  }
};

function withFormats<T extends Ajv | Ajv2020>(ajv: T): T {
  ajv.addFormat('uri', isUri);
  return ajv;
}

const ajv2020 = withFormats(new Ajv2020({ allErrors: true, strict: false }));
const ajv07 = withFormats(new Ajv({ allErrors: true, strict: false }));

ajv2020.addSchema(load('mcp-server-card.v2.schema.json'), 'server-card');

export const validators = {
  serverCard: ajv2020.compile({ $ref: 'server-card#/$defs/ServerCard' }),
  agentCardV1: ajv2020.compile(load('a2a-agent-card.v1.schema.json')),
  agentCardV03: ajv07.compile(load('a2a-agent-card.v0.3.schema.json')),
  erc8004Registration: ajv2020.compile(load('erc8004-registration-v1.schema.json')),
};

export type Validator = (typeof validators)[keyof typeof validators];

/** Validation errors as readable lines (empty when valid), for expect(...).toEqual([]). */
export function schemaErrors(validate: Validator, document: unknown): string[] {
  return validate(document) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message} ${JSON.stringify(e.params)}`);
}
