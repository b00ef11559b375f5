import { createHash } from 'node:crypto';
import { CATALOG_EMAIL_INTEGRATION, CATALOG_ORGANIZATION_SLUG } from '../../catalog/names.ts';
import { RATE_LIMIT_VARIABLES, type RateLimitName } from '../../config.ts';
import { NodeError, type NodeRunContext } from './types.ts';

/**
 * The catalog's email-send listing is free and callable without a key, and it
 * sends through the operator's own Resend account (the catalog organization's
 * `catalog-email` integration). The per-IP limit on anonymous calls does not
 * stop a sender with many addresses, nor any organization's key, from mailing
 * whoever it likes from the operator's domain. So those sends are counted per
 * recipient (one address is not flooded) and per deployment (the operator's
 * account is not drained), both per day; past either the step fails, saying
 * so. Sends through an organization's own integrations are not counted here.
 */
export async function assertCatalogEmailBudget(ctx: NodeRunContext, integration: { name: string }, to: string): Promise<void> {
  if (integration.name !== CATALOG_EMAIL_INTEGRATION || !ctx.services.rateLimiter.enabled) return;
  const owner = await ctx.services.store.selectFrom('organizations').select('slug').where('id', '=', ctx.organizationId).executeTakeFirst();
  if (owner?.slug !== CATALOG_ORGANIZATION_SLUG) return;
  const recipients = to
    .split(',')
    .map((address) => address.trim().toLowerCase())
    .filter(Boolean);
  // Counters are keyed by a hash: the rate-limit table never holds the addresses.
  for (const address of recipients) await consume(ctx, 'catalogEmailPerRecipient', createHash('sha256').update(address).digest('hex'), address);
  for (const address of recipients) await consume(ctx, 'catalogEmailPerDay', 'deployment', address);
}

async function consume(ctx: NodeRunContext, name: RateLimitName, key: string, address: string) {
  const decision = await ctx.services.rateLimiter.consume(name, key);
  if (decision.allowed) return;
  const { variable, describes } = RATE_LIMIT_VARIABLES[name];
  throw new NodeError(
    `Not sent to ${address}: this deployment's limit of ${decision.limit} ${describes} (${variable}) is reached; it resets in ${decision.resetSeconds} s. Send through your organization's own Resend or SendGrid integration instead.`,
    { limit: decision.limit, retryAfterSeconds: decision.resetSeconds },
  );
}
