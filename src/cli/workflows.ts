import { parseArgs } from 'node:util';
import { connect } from './gateway-client.ts';
import { json, oneLine, table } from './format.ts';

/** `flowgate workflows list [--json] [--url URL]`: list_workflows over REST. */

interface WorkflowRow {
  id: string;
  name: string;
  enabled: boolean;
  updatedAt: string;
  nodes: { type?: string; data?: { config?: { triggerType?: unknown } } }[];
}

const triggerType = (w: WorkflowRow) => String(w.nodes.find((n) => n.type === 'trigger')?.data?.config?.triggerType ?? '-');

export async function workflowsList(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean' }, url: { type: 'string' } }, strict: true });
  const { body } = await connect(values).call<WorkflowRow[]>('list_workflows');
  if (values.json) {
    console.log(json(body));
    return 0;
  }
  if (body.length === 0) {
    console.log('No workflows in this organization yet.');
    return 0;
  }
  const rows = body.map((w) => [w.id, oneLine(w.name, 40), w.enabled ? 'yes' : 'no', triggerType(w), w.updatedAt]);
  console.log(table(['ID', 'NAME', 'ENABLED', 'TRIGGER', 'UPDATED'], rows));
  return 0;
}
