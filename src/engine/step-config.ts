import { bindSqlTemplates, bindTemplates, resolveValue, type ResolveScope } from './resolve.ts';
import { PARAM_TOKEN } from './runners/database-query.ts';

/**
 * A step's config with its templates resolved. Code that runs in the sandbox
 * (Condition, Run Code) gets template values as bound variables and SQL gets
 * them as bound parameters, never spliced into the source.
 */
export function resolveStepConfig(actionType: string, rawConfig: Record<string, unknown>, scope: ResolveScope): Record<string, unknown> {
  if (actionType === 'Condition' || actionType === 'code/run-code') {
    const field = actionType === 'Condition' ? 'condition' : 'code';
    const source = typeof rawConfig[field] === 'string' ? (rawConfig[field] as string) : '';
    const bound = bindTemplates(source, scope);
    const { [field]: _source, ...rest } = rawConfig;
    return { ...(resolveValue(rest, scope) as Record<string, unknown>), [field]: bound.source, __bindings: bound.bindings };
  }
  if (actionType === 'Database Query') {
    const query = typeof rawConfig.dbQuery === 'string' ? rawConfig.dbQuery : '';
    const bound = bindSqlTemplates(query, scope, PARAM_TOKEN);
    const { dbQuery: _query, ...rest } = rawConfig;
    return { ...(resolveValue(rest, scope) as Record<string, unknown>), dbQuery: bound.sql, __params: bound.params };
  }
  return resolveValue(rawConfig, scope) as Record<string, unknown>;
}
