import type { Store } from '../store/db.ts';
import { assertRoom } from './quotas.ts';
import { newId, nowIso } from '../ids.ts';
import { notFound } from '../errors.ts';
import { paletteColor } from './colors.ts';

/**
 * Projects (SPEC "Project"): folders for an organization's workflows
 * (`workflows.project_id`). Names need not be unique; ids identify them.
 */

export const PROJECT_NAME_MAX = 100;
export const PROJECT_DESCRIPTION_MAX = 2000;

export interface Project {
  id: string;
  name: string;
  description: string | null;
  color: string;
  organizationId: string;
  workflowCount: number;
  createdAt: string;
  updatedAt: string;
}

/** The organization's projects with their workflow counts; one query. */
function selectProjects(db: Store, organizationId: string) {
  return db
    .selectFrom('projects')
    .selectAll('projects')
    .select((eb) =>
      eb
        .selectFrom('workflows')
        .select(eb.fn.countAll<number>().as('n'))
        .whereRef('workflows.project_id', '=', 'projects.id')
        .where('workflows.organization_id', '=', organizationId)
        .as('workflow_count'),
    )
    .where('projects.organization_id', '=', organizationId);
}

type ProjectRow = Awaited<ReturnType<ReturnType<typeof selectProjects>['executeTakeFirstOrThrow']>>;

const toProject = (row: ProjectRow): Project => ({
  id: row.id,
  name: row.name,
  description: row.description,
  color: row.color,
  organizationId: row.organization_id,
  workflowCount: Number(row.workflow_count ?? 0),
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

export async function listProjects(store: Store, organizationId: string): Promise<Project[]> {
  const rows = await selectProjects(store, organizationId).orderBy('projects.created_at').orderBy('projects.id').execute();
  return rows.map(toProject);
}

/** Another organization's project is reported exactly like a missing one, so ids cannot be probed. */
export async function getProject(store: Store, organizationId: string, projectId: string): Promise<Project> {
  const row = await selectProjects(store, organizationId).where('projects.id', '=', projectId).executeTakeFirst();
  if (!row) {
    throw notFound(`Project ${JSON.stringify(projectId)} not found in this organization. Call list_projects for the projects that exist.`, { projectId });
  }
  return toProject(row);
}

/** Without a color, the project takes the palette color after the organization's last one (by count). */
export async function createProject(
  store: Store,
  input: {
    organizationId: string;
    name: string;
    description?: string | null;
    color?: string;
    /** Projects the organization may hold (config.quotas.projects); unset: no bound. */ quota?: number;
  },
): Promise<Project> {
  return store.transaction().execute(async (trx) => {
    await assertRoom(trx, 'projects', input.quota, input.organizationId);
    let color = input.color;
    if (color === undefined) {
      const { n } = await trx
        .selectFrom('projects')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('organization_id', '=', input.organizationId)
        .executeTakeFirstOrThrow();
      color = paletteColor(Number(n));
    }
    const now = nowIso();
    const row = {
      id: newId(),
      organization_id: input.organizationId,
      name: input.name,
      description: input.description ?? null,
      color,
      created_at: now,
      updated_at: now,
    };
    await trx.insertInto('projects').values(row).execute();
    return toProject({ ...row, workflow_count: 0 });
  });
}

/** Changes only the fields given; `description: null` clears it. */
export async function updateProject(
  store: Store,
  organizationId: string,
  projectId: string,
  patch: { name?: string; description?: string | null; color?: string },
): Promise<Project> {
  return store.transaction().execute(async (trx) => {
    await getProject(trx, organizationId, projectId);
    await trx
      .updateTable('projects')
      .set({ ...patch, updated_at: nowIso() })
      .where('id', '=', projectId)
      .where('organization_id', '=', organizationId)
      .execute();
    return getProject(trx, organizationId, projectId);
  });
}

/** Deletes the project; its workflows are kept and become unassigned. Returns how many were unassigned. */
export async function deleteProject(store: Store, organizationId: string, projectId: string): Promise<{ id: string; unassignedWorkflows: number }> {
  return store.transaction().execute(async (trx) => {
    await getProject(trx, organizationId, projectId);
    // Explicit rather than left to the foreign key (ON DELETE SET NULL): it yields the count.
    const unassigned = await trx.updateTable('workflows').set({ project_id: null }).where('project_id', '=', projectId).executeTakeFirst();
    await trx.deleteFrom('projects').where('id', '=', projectId).where('organization_id', '=', organizationId).execute();
    return { id: projectId, unassignedWorkflows: Number(unassigned.numUpdatedRows) };
  });
}
