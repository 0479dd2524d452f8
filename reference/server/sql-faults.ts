/**
 * Fault switches in the installed SQL. Registration, reconfiguration and the
 * scope function contract are PL/pgSQL (sql/), so a switch that breaks one of
 * their clauses rewrites that clause of the installed function when the
 * server starts (db/install.ts, amendInstalledSql). Each line names the
 * clause it changes; with no switch on nothing runs.
 */
import { fault } from './core/faults.ts';
import { amendInstalledSql, type SqlAmendment } from './db/install.ts';

/** The PL/pgSQL checks and write behind the entry point. */
const REGISTER = 'synchro.assignment_function_register(text, integer)';
/** The operator's entry point: a SQL wrapper with the default bound that returns NULL for a NULL name. */
const ENTRY = 'synchro.synchro_register_assignment_function(text, integer)';
/** Membership rule changes: prepare (checks) and activate (generations, contents). */
const RECONFIGURE = 'synchro.synchro_reconfigure_membership(text, text, integer)';
const ACTIVATE = 'synchro.membership_reconfigure_activate(jsonb, text[], text[])';
/** Controlled composition change (073): records the composition and mints the generations. */
const COMPOSITION_ACTIVATE = 'synchro.composition_reconfigure_activate(oid, text)';
/** Staged membership backfill (044): staging a batch, the catch-up and the activation entry point. */
const BACKFILL_STAGE = 'synchro.membership_backfill_stage(bigint, text[], text[], text[], text[], boolean)';
const BACKFILL_CATCH_UP = 'synchro.membership_backfill_catch_up(jsonb)';
const BACKFILL_ACTIVATE = 'synchro.synchro_activate_membership_backfill(bigint)';
/** Push-unit step 1: the refusal of a caller's transaction with a pending deferred trigger event. */
const PUSH_GUARD = 'synchro.synchro_push_guard()';
/** Registration's checks of the key and replica identity, shared by synced and capture-only relations. */
const REGISTRATION = 'synchro.registration_register(text, text, text, text, text, text, text, text, text[], text[], integer)';
/** Scope-local compaction: the effect deletion and the floor advance of one scope. */
const COMPACT = 'synchro.synchro_compact_scope(text)';
/** Its floor advance, statement for statement as 048 writes it (a fault wraps it to swallow its failure). */
const FLOOR_ADVANCE = "  INSERT INTO synchro.scope_state (scope_id, floor_commit_lsn, floor_event_ordinal, floor_effect_ordinal)\n  VALUES (p_scope, v_floor.l, CASE WHEN v_floor.e = 9223372036854775807 THEN NULL ELSE v_floor.e END,\n          CASE WHEN v_floor.e = 9223372036854775807 THEN NULL ELSE v_floor.f END)\n  ON CONFLICT (scope_id) DO UPDATE SET floor_commit_lsn = excluded.floor_commit_lsn,\n    floor_event_ordinal = excluded.floor_event_ordinal, floor_effect_ordinal = excluded.floor_effect_ordinal\n  WHERE (coalesce(synchro.scope_state.floor_commit_lsn, '0/0'), coalesce(synchro.scope_state.floor_event_ordinal, 9223372036854775807),\n         coalesce(synchro.scope_state.floor_effect_ordinal, 2147483647))\n      < (excluded.floor_commit_lsn, coalesce(excluded.floor_event_ordinal, 9223372036854775807), coalesce(excluded.floor_effect_ordinal, 2147483647));\n";
/** The capture fence (AFTER each row): its own check of a key change made after the BEFORE guard ran. */
const FENCE = 'synchro.synchro_capture_fence()';
/** The worker check's principal conditions (084): the configured login, its membership, the sole replication principal. */
const WORKER_PRINCIPAL = 'synchro.worker_principal_valid()';
/** Capture readiness: the capture checks and the registry/trigger checks of the detail (008, 006). */
const CAPTURE_HEALTH = 'synchro.capture_health()';
const HEALTH_DETAIL = 'synchro.synchro_health_detail()';
/** How a configured readiness maximum is read (055). */
const POSITIVE_LIMIT = 'synchro.positive_limit(text)';

/** Operator compaction in batches of scopes (050): its batch size check. */
const COMPACT_SCOPES = 'synchro.synchro_compact_scopes(integer, text)';

export async function applySqlFaults(databaseUrl: string): Promise<void> {
  const amendments: SqlAmendment[] = [];
  if (fault('assignment-language-unchecked')) amendments.push({ fn: REGISTER, from: "v_p.prolang <> (SELECT oid FROM pg_language WHERE lanname = 'sql') OR v_p.prosqlbody IS NULL", to: 'false' }); // fault: server:assignment-language-unchecked
  if (fault('assignment-default-bound-100')) amendments.push({ fn: ENTRY, from: 'DEFAULT 1000', to: 'DEFAULT 100' }); // fault: server:assignment-default-bound-100
  if (fault('assignment-registration-for-adapter')) amendments.push({ statement: 'GRANT EXECUTE ON FUNCTION synchro.synchro_register_assignment_function(text, integer), synchro.synchro_unregister_assignment_function() TO synchro_adapter' }); // fault: server:assignment-registration-for-adapter
  if (fault('assignment-null-name-unregisters')) amendments.push({ fn: ENTRY, from: 'THEN NULL::void', to: 'THEN synchro.synchro_unregister_assignment_function()' }); // fault: server:assignment-null-name-unregisters
  if (fault('assignment-bound-below-one-unbounded')) amendments.push({ fn: ENTRY, from: 'assignment_function_register(p_function, p_max_scopes)', to: 'assignment_function_register(p_function, CASE WHEN p_max_scopes < 1 THEN NULL ELSE p_max_scopes END)' }); // fault: server:assignment-bound-below-one-unbounded
  if (fault('unbounded-assignment-trusted')) amendments.push({ fn: REGISTER, from: "IF v_p.provolatile <> 's' OR v_p.prosecdef THEN", to: "IF p_max_scopes IS NOT NULL AND (v_p.provolatile <> 's' OR v_p.prosecdef) THEN" }); // fault: server:unbounded-assignment-trusted
  if (fault('scope-function-contract-unchecked')) amendments.push({ statement: 'CREATE OR REPLACE FUNCTION synchro.scope_function_contract(p_proc regprocedure) RETURNS void LANGUAGE sql AS $$ SELECT $$' }); // fault: server:scope-function-contract-unchecked
  if (fault('reconfigure-refusal-as-warning')) amendments.push({ fn: RECONFIGURE, from: 'v_plan := synchro.membership_reconfigure_prepare(v_oid, p_membership_fn, p_max_scope_fanout);', to: "BEGIN v_plan := synchro.membership_reconfigure_prepare(v_oid, p_membership_fn, p_max_scope_fanout); EXCEPTION WHEN OTHERS THEN RAISE WARNING '%', SQLERRM; RETURN NULL; END;" }); // fault: server:reconfigure-refusal-as-warning
  if (fault('assignment-rule-as-warning')) amendments.push({ fn: 'synchro.assignment_rejected(text)', from: "RAISE EXCEPTION 'assignment function rejected: %'", to: "RAISE WARNING 'assignment function rejected: %'" }); // fault: server:assignment-rule-as-warning
  if (fault('scope004-composition-mints-no-generation')) amendments.push({ fn: COMPOSITION_ACTIVATE, from: 'v_scopes := synchro.bump_membership_generations(v_affected);', to: "v_scopes := (SELECT coalesce(jsonb_object_agg(scope_id, membership_generation), '{}') FROM synchro.scope_state WHERE scope_id = ANY (v_affected));" }); // fault: server:scope004-composition-mints-no-generation
  if (fault('reconfigure-mints-no-generation')) amendments.push({ fn: ACTIVATE, from: 'SELECT unnest(v_affected), 2', to: 'SELECT unnest(v_affected), 2 WHERE false' }); // fault: server:reconfigure-mints-no-generation
  if (fault('reconfigure-keeps-scope-contents')) amendments.push({ fn: ACTIVATE, from: 'WHERE r.table_id = v_rel.table_id AND r.scope_id = ANY (v_affected)', to: 'WHERE false AND r.table_id = v_rel.table_id AND r.scope_id = ANY (v_affected)' }, { fn: ACTIVATE, from: 'WHERE e.table_id = v_rel.table_id AND e.scope_id = ANY (v_affected)', to: 'WHERE false AND e.table_id = v_rel.table_id AND e.scope_id = ANY (v_affected)' }); // fault: server:reconfigure-keeps-scope-contents
  if (fault('scope005-catch-up-new-rows-only')) amendments.push({ fn: BACKFILL_CATCH_UP, from: 'OR s.server_version IS DISTINCT FROM pr.server_version', to: 'OR false' }); // fault: server:scope005-catch-up-new-rows-only
  if (fault('scope005-prior-generation-discarded')) amendments.push({ fn: BACKFILL_ACTIVATE, from: 'PERFORM synchro.membership_backfill_finish(', to: "DELETE FROM synchro.rebuild_sessions WHERE scope_id IN (SELECT jsonb_object_keys(v_result -> 'membership_generations')); PERFORM synchro.membership_backfill_finish(" }); // fault: server:scope005-prior-generation-discarded
  if (fault('scope005-backfill-writes-live-edges')) amendments.push({ fn: BACKFILL_STAGE, from: 'INSERT INTO synchro.membership_backfill_edges (backfill_id, pk_text, scope_id)', to: 'INSERT INTO synchro.membership_edges (table_id, pk_text, scope_id) SELECT (SELECT table_id FROM synchro.membership_backfills WHERE backfill_id = p_backfill), k, sc FROM unnest(p_edge_keys, p_edge_scopes) AS u(k, sc) ON CONFLICT DO NOTHING; INSERT INTO synchro.membership_backfill_edges (backfill_id, pk_text, scope_id)' }); // fault: server:scope005-backfill-writes-live-edges
  if (fault('push-guard-skipped')) amendments.push({ fn: PUSH_GUARD, from: "IF SQLERRM LIKE '%pending trigger events%' THEN", to: 'IF false THEN' }); // fault: server:push-guard-skipped
  if (fault('push-guard-fires-caller-events')) amendments.push({ fn: PUSH_GUARD, from: 'FOR v_rel IN', to: 'SET CONSTRAINTS ALL IMMEDIATE; FOR v_rel IN' }); // fault: server:push-guard-fires-caller-events
  if (fault('cap010-replica-identity-unchecked')) amendments.push({ fn: REGISTRATION, from: "IF v_ident <> 'd' THEN", to: 'IF false THEN' }); // fault: server:cap010-replica-identity-unchecked
  if (fault('cap010-deferrable-key-accepted')) amendments.push({ fn: REGISTRATION, from: 'IF v_con.condeferrable THEN', to: 'IF false THEN' }); // fault: server:cap010-deferrable-key-accepted
  if (fault('cap010-generated-key-with-push')) amendments.push({ fn: REGISTRATION, from: "IF p_push_policy = 'enabled' AND (v_pk_att.atthasdef", to: 'IF false AND (v_pk_att.atthasdef' }); // fault: server:cap010-generated-key-with-push
  if (fault('cap010-key-type-by-base-type')) amendments.push({ fn: REGISTRATION, from: 'v_pk_type := synchro.portable_type_of(v_pk_att.atttypid);', to: "v_pk_type := synchro.portable_type_of(coalesce((SELECT nullif(typbasetype, 0) FROM pg_type WHERE oid = v_pk_att.atttypid AND typtype = 'd'), v_pk_att.atttypid));" }); // fault: server:cap010-key-type-by-base-type
  if (fault('cap012-nested-change-unchecked')) amendments.push({ fn: FENCE, from: 'IF v_cmin < v_prior_cmin THEN', to: 'IF false THEN' }); // fault: server:cap012-nested-change-unchecked
  if (fault('cap012-copy-freeze-unchecked')) amendments.push({ fn: FENCE, from: "IF TG_OP = 'INSERT' AND (SELECT c.xmin = v_xact::xid AND c.relfilenode <> c.oid FROM pg_class c WHERE c.oid = TG_RELID) THEN", to: 'IF false THEN' }); // fault: server:cap012-copy-freeze-unchecked
  if (fault('cap012-dependency-fence-names-table')) amendments.push({ fn: FENCE, from: "IF v_rel.kind = 'synced' THEN", to: 'IF true THEN' }); // fault: server:cap012-dependency-fence-names-table
  if (fault('cap010-fence-skips-key-check')) amendments.push({ fn: FENCE, from: "IF TG_OP = 'UPDATE' AND v_new -> v_key IS DISTINCT FROM to_jsonb(OLD) -> v_key THEN", to: 'IF false THEN' }); // fault: server:cap010-fence-skips-key-check
  if (fault('schema004-floor-dropped-when-log-empty')) amendments.push({ fn: COMPACT, from: 'GET DIAGNOSTICS v_deleted = ROW_COUNT;', to: 'GET DIAGNOSTICS v_deleted = ROW_COUNT; IF NOT EXISTS (SELECT 1 FROM synchro.scope_effects WHERE scope_id = p_scope) THEN RETURN v_deleted; END IF;' }); // fault: server:schema004-floor-dropped-when-log-empty
  if (fault('schema004-compaction-bumps-retention-generation')) amendments.push({ fn: COMPACT, from: 'DO UPDATE SET floor_commit_lsn = excluded.floor_commit_lsn,', to: 'DO UPDATE SET retention_generation = synchro.scope_state.retention_generation + 1, floor_commit_lsn = excluded.floor_commit_lsn,' }); // fault: server:schema004-compaction-bumps-retention-generation
  if (fault('schema006-expired-clients-hold-floor')) amendments.push({ fn: COMPACT, from: 'c.user_id = k.user_id AND c.client_id = k.client_id AND NOT c.expired', to: 'c.user_id = k.user_id AND c.client_id = k.client_id' }); // fault: server:schema006-expired-clients-hold-floor
  if (fault('schema006-rebuild-pin-ignored')) amendments.push({ fn: COMPACT, from: 'WHERE s.scope_id = p_scope AND s.stream_generation = v_gen AND s.expires_at > now()', to: 'WHERE false AND s.scope_id = p_scope AND s.stream_generation = v_gen' }); // fault: server:schema006-rebuild-pin-ignored
  if (fault('schema006-floor-failure-swallowed')) amendments.push({ fn: COMPACT, from: FLOOR_ADVANCE, to: `  BEGIN\n${FLOOR_ADVANCE}  EXCEPTION WHEN OTHERS THEN RAISE WARNING 'the floor of % did not advance: %', p_scope, SQLERRM;\n  END;\n` }); // fault: server:schema006-floor-failure-swallowed
  if (fault('manifest-update-trigger-missing')) amendments.push({ statement: 'DROP TRIGGER manifests_immutable ON synchro.manifests' }); // fault: server:manifest-update-trigger-missing
  if (fault('ops001-type-usage-left-to-public')) amendments.push({ statement: 'GRANT USAGE ON TYPE synchro.synchro_row_ref TO PUBLIC' }); // fault: server:ops001-type-usage-left-to-public
  if (fault('ops001-health-detail-for-adapter')) amendments.push({ statement: 'GRANT EXECUTE ON FUNCTION synchro.synchro_health_detail() TO synchro_adapter' }); // fault: server:ops001-health-detail-for-adapter
  if (fault('ops001-adapter-reads-client-table')) amendments.push({ statement: 'GRANT SELECT ON synchro.clients TO synchro_adapter' }); // fault: server:ops001-adapter-reads-client-table
  if (fault('ops002-worker-tables-granted-to-login')) amendments.push({ statement: "DO $fault$ BEGIN EXECUTE format('GRANT USAGE ON SCHEMA synchro TO %I', current_setting('synchro.worker_login')); EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA synchro TO %I', current_setting('synchro.worker_login')); END $fault$" }); // fault: server:ops002-worker-tables-granted-to-login
  if (fault('ops002-readiness-ignores-other-replication-logins')) amendments.push({ fn: WORKER_PRINCIPAL, from: 'AND o.rolname <> (SELECT rolname FROM worker)', to: 'AND false' }); // fault: server:ops002-readiness-ignores-other-replication-logins
  if (fault('ops002-operator-executes-every-function')) amendments.push({ statement: 'GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA synchro TO synchro_operator' }); // fault: server:ops002-operator-executes-every-function
  if (fault('schema007-compaction-batch-defaulted')) amendments.push({ fn: COMPACT_SCOPES, from: 'IF p_batch_size IS NULL OR p_batch_size <= 0 THEN', to: 'p_batch_size := CASE WHEN p_batch_size > 0 THEN p_batch_size ELSE 100 END; IF false THEN' }); // fault: server:schema007-compaction-batch-defaulted
  if (fault('cap011-registry-check-inverted')) amendments.push({ fn: HEALTH_DETAIL, from: 'FROM synchro.registry_generations WHERE NOT validated)', to: 'FROM synchro.registry_generations WHERE validated)' }); // fault: server:cap011-registry-check-inverted
  if (fault('cap011-publication-shape-unchecked')) amendments.push({ fn: CAPTURE_HEALTH, from: 'AND (pr.prqual IS NOT NULL OR pr.prattrs IS NOT NULL)', to: 'AND false' }); // fault: server:cap011-publication-shape-unchecked
  if (fault('ops003-unknown-check-counts-as-ok')) amendments.push({ fn: HEALTH_DETAIL, from: "SELECT bool_and(coalesce(v_checks -> r ->> 'state', 'absent') = 'ok') INTO v_ready", to: "SELECT bool_and(coalesce(v_checks -> r ->> 'state', 'absent') <> 'failed') INTO v_ready" }); // fault: server:ops003-unknown-check-counts-as-ok
  if (fault('cap011-disabled-trigger-counted')) amendments.push({ fn: HEALTH_DETAIL, from: "AND t.tgenabled = 'O'", to: '' }); // fault: server:cap011-disabled-trigger-counted
  if (fault('cap011-worker-on-any-database')) amendments.push({ fn: CAPTURE_HEALTH, from: "WHERE datname = current_database() AND application_name = 'synchro-capture'", to: "WHERE application_name = 'synchro-capture'" }); // fault: server:cap011-worker-on-any-database
  if (fault('ops004-heartbeat-age-sign-reversed')) amendments.push({ fn: CAPTURE_HEALTH, from: 'v_hb_age := extract(epoch FROM synchro.server_now() - v_worker.heartbeat_at);', to: 'v_hb_age := extract(epoch FROM v_worker.heartbeat_at - synchro.server_now());' }); // fault: server:ops004-heartbeat-age-sign-reversed
  if (fault('ops004-infinite-limit-accepted')) amendments.push({ fn: POSITIVE_LIMIT, from: "OR v IN ('Infinity'::double precision, '-Infinity'::double precision)", to: '' }); // fault: server:ops004-infinite-limit-accepted
  if (fault('ops004-future-heartbeat-accepted')) amendments.push({ fn: CAPTURE_HEALTH, from: 'OR v_hb_age < 0 OR', to: 'OR' }); // fault: server:ops004-future-heartbeat-accepted
  if (fault('ops004-missing-lag-counts-as-zero')) amendments.push({ fn: CAPTURE_HEALTH, from: 'v_lag_bytes := pg_wal_lsn_diff(pg_current_wal_lsn(), v_slot.confirmed_flush_lsn);', to: 'v_lag_bytes := coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), v_slot.confirmed_flush_lsn), 0);' }); // fault: server:ops004-missing-lag-counts-as-zero
  if (amendments.length > 0) await amendInstalledSql(databaseUrl, amendments);
}
