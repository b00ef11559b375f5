import type { Store } from '../store/db.ts';
import { unavailableSteps } from './availability.ts';
import type { WorkflowNode } from './graph.ts';
import { describeGraph, publicTagsOf, publicWorkflowsQuery, type PublicTagRef } from './public-workflows.ts';

/**
 * What search needs of the public workflows. Search is anonymous and reads
 * every tenant's public workflows, each up to a request body of graph: parsing
 * those graphs on every search made one anonymous request cost a second of the
 * shared process per 50 MB published (README "Search"). A graph is now read
 * and parsed once per version (its `updated_at`, which every write of a graph
 * sets); each search reads only the summary columns.
 */

/** What search derives from a graph. */
export interface GraphFacts {
  /** False when a step cannot run on this gateway: search does not offer the workflow. */
  runnable: boolean;
  networks: string[];
  workflowType: 'read' | 'write';
}

export interface PublicSummary extends GraphFacts {
  id: string;
  name: string;
  description: string | null;
  publicTags: PublicTagRef[];
  featured: boolean;
  featuredCategory: string | null;
  featuredProtocol: string | null;
}

/** Per process; keyed by workflow id, valid for one `updated_at`. Entries are a few hundred bytes; past the bound the map starts again. */
const known = new Map<string, { updatedAt: string; facts: GraphFacts }>();
const MAX_KNOWN = 100_000;
const PAGE = 200;
/** Graphs read at once on a miss: up to a request body each, so a few at a time. */
const GRAPH_BATCH = 16;

function graphFacts(nodes: readonly WorkflowNode[]): GraphFacts {
  const { networks, workflowType } = describeGraph(nodes);
  return { runnable: unavailableSteps(nodes).length === 0, networks, workflowType };
}

async function factsFor(store: Store, rows: readonly { id: string; updated_at: string }[]): Promise<Map<string, GraphFacts>> {
  const out = new Map<string, GraphFacts>();
  const missing: string[] = [];
  for (const row of rows) {
    const hit = known.get(row.id);
    if (hit && hit.updatedAt === row.updated_at) out.set(row.id, hit.facts);
    else missing.push(row.id);
  }
  for (let i = 0; i < missing.length; i += GRAPH_BATCH) {
    const graphs = await store
      .selectFrom('workflows')
      .select(['id', 'nodes', 'updated_at'])
      .where('id', 'in', missing.slice(i, i + GRAPH_BATCH))
      .execute();
    for (const graph of graphs) {
      const facts = graphFacts(JSON.parse(graph.nodes) as WorkflowNode[]);
      if (known.size >= MAX_KNOWN) known.clear();
      known.set(graph.id, { updatedAt: graph.updated_at, facts });
      out.set(graph.id, facts);
    }
  }
  return out;
}

/**
 * Every public workflow's summary, a page at a time in the public list's order. A workflow published
 * meanwhile can shift the pages by one; one seen twice is skipped, and one deleted between the page and
 * its graph's read is left out.
 */
export async function* eachPublicSummary(store: Store): AsyncGenerator<PublicSummary> {
  const seen = new Set<string>();
  for (let offset = 0; ; offset += PAGE) {
    const page = await publicWorkflowsQuery(store)
      .select([
        'workflows.id',
        'workflows.name',
        'workflows.description',
        'workflows.featured',
        'workflows.featured_category',
        'workflows.featured_protocol',
        'workflows.updated_at',
      ])
      .limit(PAGE)
      .offset(offset)
      .execute();
    const fresh = page.filter((row) => !seen.has(row.id) && seen.add(row.id));
    const [facts, tags] = await Promise.all([
      factsFor(store, fresh),
      publicTagsOf(
        store,
        fresh.map((row) => row.id),
      ),
    ]);
    for (const row of fresh) {
      const derived = facts.get(row.id);
      if (!derived) continue;
      yield {
        id: row.id,
        name: row.name,
        description: row.description,
        publicTags: tags.get(row.id) ?? [],
        featured: row.featured === 1,
        featuredCategory: row.featured_category,
        featuredProtocol: row.featured_protocol,
        ...derived,
      };
    }
    if (page.length < PAGE) return;
  }
}
