import { getAction } from '../actions/index.ts';
import type { WorkflowNode } from './graph.ts';

/**
 * Which steps of a saved graph cannot run on this gateway: their action is in
 * the registry but reports `featureEnabled: false` (no runner yet, or its
 * feature is rolled back). Saves refuse such actions; this is for graphs
 * saved earlier and for the catalog, so surfaces that offer a workflow to
 * callers (listings, search) can leave out one that would only fail.
 */

export interface UnavailableStep {
  nodeId: string;
  nodeLabel: string;
  actionType: string;
}

export function unavailableSteps(nodes: readonly Pick<WorkflowNode, 'id' | 'data'>[]): UnavailableStep[] {
  const steps: UnavailableStep[] = [];
  for (const node of nodes) {
    const actionType = node.data?.config?.actionType;
    if (typeof actionType !== 'string') continue;
    const action = getAction(actionType);
    if (action && !action.featureEnabled) steps.push({ nodeId: node.id, nodeLabel: node.data.label, actionType });
  }
  return steps;
}

/** `step "Send Email" (send) uses resend/send-email`, joined for a message. */
export const describeUnavailable = (steps: readonly UnavailableStep[]): string =>
  steps.map((s) => `step "${s.nodeLabel}" (${s.nodeId}) uses ${s.actionType}`).join('; ');
