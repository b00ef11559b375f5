import type { AnyTool } from '../../tools/define.ts';
import type { ToolFamily } from '../../tools/families.ts';

/**
 * Skills (A2A card, docs) from the registry's tool families: one skill per
 * family with at least one MCP tool in the registry. Tools in no described
 * family still appear, grouped by their REST route group, so a card never
 * hides an operation the gateway offers.
 */

export interface Skill {
  id: string;
  name: string;
  description: string;
  tags: string[];
  examples?: string[];
  tools: AnyTool[];
  /** `key`: every tool needs an organization key; `public`: none does; `mixed`: some do. */
  access: 'key' | 'public' | 'mixed';
}

const routeGroup = (tool: AnyTool) =>
  tool.rest?.path
    .replace(/^\/api\//, '/')
    .split('/')
    .filter(Boolean)[0] ?? 'other';

function describe(base: string, tools: AnyTool[]): string {
  return `${base} Tools: ${tools.map((t) => t.name).join(', ')}.`;
}

function access(tools: AnyTool[]): Skill['access'] {
  const open = tools.filter((t) => t.scope === 'public' || t.anonymous).length;
  return open === 0 ? 'key' : open === tools.length ? 'public' : 'mixed';
}

export function deriveSkills(registry: readonly AnyTool[], families: readonly ToolFamily[]): Skill[] {
  const exposed = registry.filter((t) => t.mcp);
  const claimed = new Set<AnyTool>();
  const skills: Skill[] = [];
  for (const family of families) {
    const tools = exposed.filter((t) => family.tools.includes(t));
    tools.forEach((t) => claimed.add(t));
    if (tools.length === 0) continue;
    skills.push({
      id: family.id,
      name: family.name,
      description: describe(family.description, tools),
      tags: [...family.tags],
      ...(family.examples ? { examples: [...family.examples] } : {}),
      tools,
      access: access(tools),
    });
  }
  const leftovers = new Map<string, AnyTool[]>();
  for (const tool of exposed.filter((t) => !claimed.has(t))) {
    const group = routeGroup(tool);
    leftovers.set(group, [...(leftovers.get(group) ?? []), tool]);
  }
  for (const [group, tools] of leftovers) {
    skills.push({
      id: group,
      name: `${group[0]!.toUpperCase()}${group.slice(1)} operations`,
      description: describe(`Operations under ${group}.`, tools),
      tags: [group],
      tools,
      access: access(tools),
    });
  }
  return skills;
}
