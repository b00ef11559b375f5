import type { Kysely } from 'kysely';

/**
 * What one authorization code or token needs beyond its grant. An access
 * token's own scope: a refresh asking for less than the grant gets a token
 * with only that (RFC 6749 §6); null is the grant's scope, as every token
 * before had. A code's redirect_uri as the authorization request sent it, or
 * null when it sent none: /token must then repeat it exactly (§4.1.3).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('oauth_tokens').addColumn('scope', 'text').execute();
  await db.schema.alterTable('oauth_codes').addColumn('redirect_uri', 'text').execute();
}
