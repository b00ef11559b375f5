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
  description:
    'The plan and every feature with the actions it gates (self-hosted: all enabled unless their actions cannot run here). Check it before using an action whose requiredPlan is not null.',
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
