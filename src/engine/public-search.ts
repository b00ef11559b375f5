import type { Store } from '../store/db.ts';
import { versioned } from '../store/versioned.ts';
import { deepFreeze } from '../immutable.ts';
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

/** A summary with the lowercased text a query's words are looked for in. */
export interface SearchableSummary extends PublicSummary {
  searchText: string;
}

const searchTextOf = (workflow: PublicSummary) =>
  [
    workflow.name,
    workflow.description ?? '',
    workflow.featuredCategory ?? '',
    workflow.featuredProtocol ?? '',
    ...workflow.publicTags.flatMap((t) => [t.name, t.slug]),
  ]
    .join(' ')
    .toLowerCase();

/**
 * Every public workflow's summary, in the public list's order, read again only when a change to public
 * workflows or their tags has moved the counter (migration 031). Each tenant may publish 50 workflows,
 * and every anonymous search read and matched them all: with a hundred tenants' 5,000, 86 to 100 ms
 * of gateway CPU per search. Frozen: shared by every caller until the counter moves.
 */
const kept = versioned(
  'public_workflows_version',
  async (store) => {
    const all: SearchableSummary[] = [];
    for await (const workflow of eachPublicSummary(store)) all.push({ ...workflow, searchText: searchTextOf(workflow) });
    return deepFreeze(all);
  },
  (all) => all.length,
);

export const publicSummaries = async (store: Store): Promise<readonly SearchableSummary[]> => (await kept(store)).value;

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
async function* eachPublicSummary(store: Store): AsyncGenerator<PublicSummary> {
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
