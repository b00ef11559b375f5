import { actions, triggers, type ActionDefinition, type FieldMap } from '../actions/index.ts';
import { SCHEMA_DOCUMENT_VERSION } from '../actions/schema-document.ts';

/**
 * The action reference page, generated from the action registry (src/actions)
 * on every start, so it lists exactly what list_action_schemas and the
 * validator accept.
 */

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function fieldTable(title: string, fields: FieldMap): string[] {
  const entries = Object.entries(fields);
  if (entries.length === 0) return [];
  return [`${title}:`, '', '| Field | Type |', '|---|---|', ...entries.map(([name, type]) => `| \`${name}\` | ${cell(type)} |`), ''];
}

function actionSection(a: ActionDefinition): string[] {
  const facts = [
    `Category: ${a.category}`,
    a.integration ? `integration \`${a.integration}\`` : 'system action',
    a.requiredPlan ? `plan ${a.requiredPlan}` : 'every plan',
    ...('requiresCredentials' in a && a.requiresCredentials ? ['needs credentials (an integration)'] : []),
    ...(a.runnable === false ? ['**cannot run on this gateway yet** (a workflow using it is refused)'] : a.featureEnabled ? [] : ['currently switched off']),
  ];
  return [
    `### ${a.actionType}`,
    '',
    `**${a.label}.** ${a.description}`,
    '',
    `${facts.join(' · ')}.`,
    '',
    ...('sourceHandles' in a && a.sourceHandles ? [`Edges leave it with \`sourceHandle\` ${a.sourceHandles.map((h) => `\`${h}\``).join(' or ')}.`, ''] : []),
    ...('operators' in a && a.operators ? [`Operators: ${a.operators.map((o) => `\`${o}\``).join(' ')}.`, ''] : []),
    ...fieldTable('Required config', a.requiredFields),
    ...fieldTable('Optional config', a.optionalFields),
    ...fieldTable('Output', a.outputFields),
    ...(a.exampleConfig ? ['Example `data.config`:', '', '```json', JSON.stringify(a.exampleConfig, null, 2), '```', ''] : []),
  ];
}

export function actionReferenceMarkdown(): string {
  const categories = [...new Set(actions.map((a) => a.category))];
  return [
    '# Action reference',
    '',
    `Every trigger and action a workflow node can use, generated from the action registry (schema version ${SCHEMA_DOCUMENT_VERSION}). The same data is served as JSON by \`GET /api/mcp/schemas\` and the \`list_action_schemas\` MCP tool. \`config.triggerType\` and \`config.actionType\` must match a heading below exactly.`,
    '',
    '## Triggers',
    '',
    ...triggers.flatMap((t) => [
      `### ${t.triggerType}`,
      '',
      `**${t.label}.** ${t.description}`,
      '',
      ...fieldTable('Required config', t.requiredFields),
      ...fieldTable('Optional config', t.optionalFields),
      ...fieldTable('Output', t.outputFields),
    ]),
    ...categories.flatMap((category) => [`## ${category} actions`, '', ...actions.filter((a) => a.category === category).flatMap(actionSection)]),
  ].join('\n');
}
