import { z } from 'zod';
import { AUDIT_ACTIONS } from '../src/org/audit-log.ts';
import { auditRowSchema, queryAuditLog } from '../src/org/audit-log-query.ts';
import { requireRole } from '../src/org/roles.ts';
import { defineTool } from './define.ts';
import { requirePrincipal } from './authorize.ts';

/**
 * The organization's audit log (issue "Identity and access" item 7): read by
 * admins and owners (a session, or an mcp:admin key whose user still holds
 * that role), exported behind step-up. No operation changes a row.
 */

const filters = {
  action: z.enum(AUDIT_ACTIONS).optional().describe('Only rows of this action'),
  since: z.iso.datetime({ offset: true }).optional().describe('Only rows at or after this ISO 8601 time'),
};

const listAuditLogTool = defineTool({
  name: 'list_audit_log',
  title: 'Read the audit log',
  description: 'Audit rows of the organization, newest first (admins and owners): who did what, to which target, from which IP. Page with nextCursor.',
  scope: 'mcp:admin',
  input: z.object({
    ...filters,
    limit: z.coerce.number().int().min(1).max(200).default(50).describe('Rows per page, 1-200 (default 50)'),
    cursor: z.string().max(200).optional().describe('nextCursor of the previous page'),
  }),
  output: z.object({ rows: z.array(auditRowSchema), nextCursor: z.string().nullable() }),
  rest: { method: 'GET', path: '/api/audit-log' },
  // REST only: tools/list is near its 40 KB budget (test/context-budget.test.ts), which the key tools need more.
  mcp: false,
  async handler(input, ctx) {
    const principal = requirePrincipal(ctx);
    await requireRole(ctx.services.store, principal, 'admin');
    return queryAuditLog(ctx.services.store, principal.organizationId, input);
  },
});

export const auditLogTools = [listAuditLogTool];
