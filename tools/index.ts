import type { AnyTool } from './define.ts';
import { accountTools } from './account.ts';
import { authTools } from './auth.ts';
import { emailAuthTools } from './email-auth.ts';
import { signInLinkTools } from './sign-in-link.ts';
import { keyTools } from './keys.ts';
import { totpTools } from './totp.ts';
import { sessionTools } from './sessions.ts';
import { oauthClientTools } from './oauth-clients.ts';
import { memberTools } from './members.ts';
import { auditLogTools } from './audit-log.ts';
import { spendCapTools } from './spend-caps.ts';
import { walletExportTools } from './wallet-export.ts';
import { walletWithdrawTools } from './wallet-withdraw.ts';
import { chainTools } from './chains.ts';
import { discoveryTools } from './discovery.ts';
import { documentationTools } from './documentation.ts';
import { featureTools } from './features.ts';
import { healthTools } from './health.ts';
import { schemaTools } from './schemas.ts';
import { projectTools } from './projects.ts';
import { publicTagTools } from './public-tags.ts';
import { tagTools } from './tags.ts';
import { integrationTools } from './integrations.ts';
import { userKeyTools } from './user-keys.ts';
import { validationTools } from './validation.ts';
import { workflowTools } from './workflows.ts';
import { executionTools } from './executions.ts';
import { publicWorkflowTools } from './public-workflows.ts';
import { executeTools } from './execute.ts';
import { executeNodeTools } from './execute-node.ts';
import { workflowCallTools } from './workflow-calls.ts';
import { analyticsTools } from './analytics.ts';
import { usageTools } from './usage.ts';

/** The registry: every operation of the gateway, once. Add new families here. */
export const registry: readonly AnyTool[] = [
  ...healthTools,
  ...discoveryTools,
  ...documentationTools,
  ...schemaTools,
  ...chainTools,
  ...featureTools,
  ...accountTools,
  ...authTools,
  ...emailAuthTools,
  ...signInLinkTools,
  ...keyTools,
  ...totpTools,
  ...sessionTools,
  ...oauthClientTools,
  ...memberTools,
  ...auditLogTools,
  ...spendCapTools,
  ...usageTools,
  ...walletExportTools,
  ...walletWithdrawTools,
  ...workflowTools,
  ...publicWorkflowTools,
  ...workflowCallTools,
  ...executionTools,
  ...validationTools,
  ...tagTools,
  ...publicTagTools,
  ...projectTools,
  ...userKeyTools,
  ...integrationTools,
  ...executeTools,
  ...executeNodeTools,
  ...analyticsTools,
];

const names = new Set<string>();
for (const tool of registry) {
  if (names.has(tool.name)) throw new Error(`Duplicate tool name in registry: ${tool.name}`);
  names.add(tool.name);
}
