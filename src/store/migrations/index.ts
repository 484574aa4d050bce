/** Every store migration, by number. */
import type { Migration } from 'kysely';
import * as core from './001_core.js';
import * as flaky from './002_flaky.js';
import * as flakyResults from './003_flaky_results.js';
import * as trust from './004_trust.js';
import * as tokenUsage from './005_token_usage.js';
import * as replicas from './006_replicas.js';
import * as prHistory from './007_pr_history.js';
import * as flakyPartialIndexes from './008_flaky_partial_indexes.js';
import * as webhooks from './009_webhooks.js';
import * as riskFacts from './010_risk_facts.js';
import * as forgeEvents from './011_forge_events.js';
import * as queueHistory from './012_queue_history.js';
import * as webhookLines from './015_webhook_lines.js';
import * as tokenPermissions from './016_token_permissions.js';
import * as doctor from './019_doctor.js';
import * as flakyTickets from './020_flaky_tickets.js';
import * as quarantineUntil from './021_quarantine_until.js';
import * as overrideLapse from './022_override_lapse.js';

/**
 * Every migration, in order. Kysely applies them by name (sorted), so add a new file
 * `NNN_name.ts` and one line here.
 */
export const migrations: Record<string, Migration> = {
  '001_core': core,
  '002_flaky': flaky,
  '003_flaky_results': flakyResults,
  '004_trust': trust,
  '005_token_usage': tokenUsage,
  '006_replicas': replicas,
  '007_pr_history': prHistory,
  '008_flaky_partial_indexes': flakyPartialIndexes,
  '009_webhooks': webhooks,
  '010_risk_facts': riskFacts,
  '011_forge_events': forgeEvents,
  '012_queue_history': queueHistory,
  '015_webhook_lines': webhookLines,
  '016_token_permissions': tokenPermissions,
  '019_doctor': doctor,
  '020_flaky_tickets': flakyTickets,
  '021_quarantine_until': quarantineUntil,
  '022_override_lapse': overrideLapse,
};
