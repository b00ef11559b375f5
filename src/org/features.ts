import { actions, features } from '../actions/index.ts';
import type { ActionCategory, Plan } from '../actions/types.ts';

/**
 * The `GET /api/features` snapshot. Features and their action lists are
 * derived from the action registry, so the snapshot cannot name an action
 * that does not exist or miss one that does.
 */

export interface FeatureEntry {
  id: string;
  name: string;
  description: string;
  category: ActionCategory;
  enabled: boolean;
  requiredPlan: Plan | null;
  actionTypes: string[];
}

export interface FeatureSnapshot {
  plan: Plan;
  billingEnabled: boolean;
  enabledFeatureIds: string[];
  features: FeatureEntry[];
}

/**
 * Self-hosted installs run with billing disabled: the plan is `enterprise`
 * and every feature is on unless it was rolled back for all plans or its
 * actions cannot run on this gateway yet (their `featureEnabled` is false; a
 * feature never mixes runnable and unrunnable actions, test/actions-registry).
 */
export function buildFeatureSnapshot(): FeatureSnapshot {
  const entries = features.map((f): FeatureEntry => {
    const own = actions.filter((a) => a.featureId === f.id);
    return {
      id: f.id,
      name: f.name,
      description: f.description,
      category: f.category,
      enabled: !f.rolledBack && own.every((a) => a.featureEnabled),
      requiredPlan: f.requiredPlan,
      actionTypes: own.map((a) => a.actionType),
    };
  });
  return {
    plan: 'enterprise',
    billingEnabled: false,
    enabledFeatureIds: entries.filter((f) => f.enabled).map((f) => f.id),
    features: entries,
  };
}
