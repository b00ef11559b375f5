import { z } from 'zod';
import { AUDIT_ACTIONS, recordAudit } from '../src/org/audit-log.ts';
import { AUDIT_EXPORT_MAX_ROWS, exportAuditRows, auditRowSchema, auditRowsToCsv, auditRowsToJsonLines, queryAuditLog } from '../src/org/audit-log-query.ts';
import { requireStepUp, stepUpProofFields } from '../src/auth/step-up.ts';
import { defineTool } from './define.ts';
import { requirePrincipal } from './authorize.ts';
import { pageLimit } from './inputs.ts';

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
    limit: pageLimit(200, 50).describe('Rows per page, 1-200 (default 50)'),
    cursor: z.string().max(200).optional().describe('nextCursor of the previous page'),
  }),
  output: z.object({ rows: z.array(auditRowSchema), nextCursor: z.string().nullable() }),
  rest: { method: 'GET', path: '/api/audit-log' },
  // REST only: tools/list is near its 40 KB budget (test/context-budget.test.ts), which the key tools need more.
  mcp: false,
  async handler(input, ctx) {
    const principal = requirePrincipal(ctx);
    return queryAuditLog(ctx.services.store, principal.organizationId, input);
  },
});

const FORMATS = {
  jsonl: { contentType: 'application/x-ndjson', render: auditRowsToJsonLines },
  csv: { contentType: 'text/csv', render: auditRowsToCsv },
} as const;

const exportAuditLogTool = defineTool({
  name: 'export_audit_log',
  title: 'Export the audit log',
  description: [
    'Every audit row matching the filters, newest first, as JSON lines (one row object per line) or CSV, in `content` (admins and owners).',
    'Step-up `audit_export`: the first call answers 401 signature_required with a `challenge`; personal_sign it with your wallet and repeat with `signature`.',
  ].join(' '),
  scope: 'mcp:admin',
  input: z.object({ format: z.enum(['jsonl', 'csv']).default('jsonl').describe('jsonl (default) or csv'), ...filters, ...stepUpProofFields }),
  output: z.object({
    format: z.enum(['jsonl', 'csv']),
    contentType: z.string(),
    filename: z.string(),
    rowCount: z.number().int(),
    truncated: z.boolean().describe(`true when more rows matched than one export carries (${AUDIT_EXPORT_MAX_ROWS}, the newest): narrow it with since`),
    content: z.string().describe('The export itself: JSON lines or CSV (a header line, then one line per row)'),
  }),
  rest: { method: 'POST', path: '/api/audit-log/export' },
  mcp: false,
  async handler(input, ctx) {
    const principal = requirePrincipal(ctx);
    const { store } = ctx.services;
    await requireStepUp(ctx.services, principal, 'audit_export', input, ctx.ip);
    const { rows, truncated } = await exportAuditRows(store, principal.organizationId, { action: input.action, since: input.since });
    // Recorded after the read: the export shows the log as it was when asked for.
    await recordAudit(store, {
      organizationId: principal.organizationId,
      actor: principal,
      action: 'audit_log_exported',
      ip: ctx.ip,
      details: { format: input.format, rowCount: rows.length, action: input.action ?? null, since: input.since ?? null },
    });
    const format = FORMATS[input.format];
    const filename = `audit-log-${new Date().toISOString().slice(0, 10)}.${input.format}`;
    ctx.setHeader('Content-Disposition', `attachment; filename="${filename}"`);
    return { format: input.format, contentType: format.contentType, filename, rowCount: rows.length, truncated, content: format.render(rows) };
  },
});

export const auditLogTools = [listAuditLogTool, exportAuditLogTool];
