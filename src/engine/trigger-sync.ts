import type { Services } from '../services.ts';
import { syncChainTrigger } from './chain-triggers/cursors.ts';
import { syncSchedule } from './scheduler.ts';
import type { WorkflowRecord } from './workflows.ts';

/**
 * After a workflow is saved (create, update, enable/disable, duplicate,
 * claim): its schedule row and chain-trigger cursor follow the saved trigger.
 * Deleting a workflow removes both by cascade.
 */
export async function syncTriggers(services: Pick<Services, 'store' | 'chains' | 'chainClients'>, workflow: WorkflowRecord): Promise<void> {
  await syncSchedule(services.store, workflow);
  await syncChainTrigger(services, workflow);
}
