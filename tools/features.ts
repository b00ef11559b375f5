import { z } from 'zod';
import { buildFeatureSnapshot } from '../src/org/features.ts';
import { defineTool, READ_ONLY_LOCAL } from './define.ts';

/** SPEC.md "Feature snapshot". */
const featureSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  category: z.string(),
  enabled: z.boolean().describe('False when the feature is rolled back or its actions cannot run on this gateway yet'),
  requiredPlan: z.enum(['free', 'pro', 'enterprise']).nullable().describe('Plan needed for the feature, or null for every plan'),
  actionTypes: z.array(z.string()).describe('Actions (data.config.actionType values) this feature gates'),
});

const getFeatures = defineTool({
  name: 'get_features',
  title: 'Get plan and features',
  description: [
    "Returns the organization's plan, whether billing is enabled, and every feature with the actions it gates and the plan it requires.",
    'On self-hosted installs billing is disabled and the plan is enterprise: every feature is enabled except one whose actions cannot run on this gateway yet (enabled: false).',
    'Check it before building a workflow with actions whose requiredPlan is not null (list_action_schemas shows requiredPlan and featureId per action).',
  ].join(' '),
  input: z.object({}),
  output: z.object({
    plan: z.enum(['free', 'pro', 'enterprise']),
    billingEnabled: z.boolean(),
    enabledFeatureIds: z.array(z.string()),
    features: z.array(featureSchema),
  }),
  scope: 'mcp:read',
  rest: { method: 'GET', path: '/api/features' },
  mcp: { annotations: READ_ONLY_LOCAL },
  handler() {
    return buildFeatureSnapshot();
  },
});

export const featureTools = [getFeatures];
