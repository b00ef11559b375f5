import type { Migration, MigrationProvider } from 'kysely';
import * as core from './001_core.ts';
import * as abiCache from './002_abi_cache.ts';
import * as rateLimits from './003_rate_limits.ts';
import * as workflows from './004_workflows.ts';
import * as executionEngine from './005_execution_engine.ts';
import * as integrations from './006_integrations.ts';
import * as directExecution from './007_direct_execution.ts';
import * as listingsPayments from './008_listings_payments.ts';
import * as chainTriggers from './009_chain_triggers.ts';
import * as partialRunIndexes from './010_partial_run_indexes.ts';
import * as identity from './011_identity.ts';
import * as stepUpTotpReplay from './012_stepup_totp_replay.ts';
import * as membersChainSpend from './013_members_chain_spend.ts';
import * as signupEmail from './014_signup_email.ts';
import * as oauth from './015_oauth.ts';
import * as analyticsIndexes from './016_analytics_indexes.ts';
import * as signInLinks from './017_sign_in_links.ts';
import * as chainNonces from './018_chain_nonces.ts';
import * as storeSettings from './019_store_settings.ts';
import * as spendTotals from './020_spend_totals.ts';
import * as schedulesByOrganization from './021_schedules_by_organization.ts';
import * as pendingRunsByOrganization from './022_pending_runs_by_organization.ts';
import * as organizationRunData from './023_organization_run_data.ts';
import * as runDataRetention from './024_run_data_retention.ts';
import * as housekeepingIndexes from './025_housekeeping_indexes.ts';
import * as pendingRunsByAge from './026_pending_runs_by_age.ts';
import * as skippedRunsPerDay from './027_skipped_runs_per_day.ts';
import * as publicSearchIndex from './028_public_search_index.ts';
import * as listingsVersion from './029_listings_version.ts';
import * as publicTagsVersion from './030_public_tags_version.ts';
import * as publicWorkflowsVersion from './031_public_workflows_version.ts';
import * as publicOrderIndex from './032_public_order_index.ts';
import * as stepUpCredential from './033_step_up_credential.ts';
import * as rateLimitHits from './034_rate_limit_hits.ts';
import * as oauthTokenScope from './035_oauth_token_scope.ts';
import * as unpricedWriteListings from './036_unpriced_write_listings.ts';
import * as paymentSettling from './037_payment_settling.ts';
import * as directExecutionUnfinished from './038_direct_execution_unfinished.ts';
import * as spendReservationTransaction from './039_spend_reservation_transaction.ts';

/** Ordered, append-only. Never edit a migration that has shipped; add a new one. */
export const migrations: Record<string, Migration> = {
  '001_core': core,
  '002_abi_cache': abiCache,
  '003_rate_limits': rateLimits,
  '004_workflows': workflows,
  '005_execution_engine': executionEngine,
  '006_integrations': integrations,
  '007_direct_execution': directExecution,
  '008_listings_payments': listingsPayments,
  '009_chain_triggers': chainTriggers,
  '010_partial_run_indexes': partialRunIndexes,
  '011_identity': identity,
  '012_stepup_totp_replay': stepUpTotpReplay,
  '013_members_chain_spend': membersChainSpend,
  '014_signup_email': signupEmail,
  '015_oauth': oauth,
  '016_analytics_indexes': analyticsIndexes,
  '017_sign_in_links': signInLinks,
  '018_chain_nonces': chainNonces,
  '019_store_settings': storeSettings,
  '020_spend_totals': spendTotals,
  '021_schedules_by_organization': schedulesByOrganization,
  '022_pending_runs_by_organization': pendingRunsByOrganization,
  '023_organization_run_data': organizationRunData,
  '024_run_data_retention': runDataRetention,
  '025_housekeeping_indexes': housekeepingIndexes,
  '026_pending_runs_by_age': pendingRunsByAge,
  '027_skipped_runs_per_day': skippedRunsPerDay,
  '028_public_search_index': publicSearchIndex,
  '029_listings_version': listingsVersion,
  '030_public_tags_version': publicTagsVersion,
  '031_public_workflows_version': publicWorkflowsVersion,
  '032_public_order_index': publicOrderIndex,
  '033_step_up_credential': stepUpCredential,
  '034_rate_limit_hits': rateLimitHits,
  '035_oauth_token_scope': oauthTokenScope,
  '036_unpriced_write_listings': unpricedWriteListings,
  '037_payment_settling': paymentSettling,
  '038_direct_execution_unfinished': directExecutionUnfinished,
  '039_spend_reservation_transaction': spendReservationTransaction,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
