-- WAL capture state. Only the capture worker writes these tables, one source
-- transaction per database transaction, in commit order.

-- Singleton progress row. NULL materialized_commit_lsn = generation_start.
CREATE TABLE synchro.wal_progress (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  stream_generation text NOT NULL,
  slot_name text NOT NULL,
  generation_start_lsn pg_lsn NOT NULL,
  processed_end_lsn pg_lsn NOT NULL,
  materialized_commit_lsn pg_lsn,
  materialized_end_lsn pg_lsn,
  acknowledged_end_lsn pg_lsn NOT NULL,
  CHECK (processed_end_lsn >= generation_start_lsn),
  CHECK (materialized_end_lsn IS NULL OR materialized_end_lsn <= processed_end_lsn),
  CHECK (acknowledged_end_lsn BETWEEN generation_start_lsn AND processed_end_lsn)
);

-- One row per materialized source transaction (zero-event ones included).
CREATE TABLE synchro.wal_transactions (
  stream_generation text NOT NULL,
  commit_lsn pg_lsn NOT NULL,
  end_lsn pg_lsn NOT NULL,
  source_xid bigint NOT NULL,
  event_count integer NOT NULL CHECK (event_count >= 0),
  effect_count integer NOT NULL CHECK (effect_count >= 0),
  content_hash bytea NOT NULL CHECK (octet_length(content_hash) = 32),
  materialized_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (stream_generation, commit_lsn),
  UNIQUE (stream_generation, end_lsn)
);

-- Commit-ordered projected state of every registered row (deleted rows stay as tombstones).
CREATE TABLE synchro.projections (
  table_id text NOT NULL,
  pk_text text NOT NULL,
  row_wire jsonb,
  row_source jsonb,
  server_version text NOT NULL,
  deleted boolean NOT NULL,
  commit_lsn pg_lsn NOT NULL,
  event_ordinal bigint NOT NULL,
  PRIMARY KEY (table_id, pk_text)
);

-- Current membership: which scopes contain which row.
CREATE TABLE synchro.membership_edges (
  table_id text NOT NULL,
  pk_text text NOT NULL,
  scope_id text NOT NULL,
  PRIMARY KEY (table_id, pk_text, scope_id)
);
CREATE INDEX membership_edges_scope ON synchro.membership_edges (scope_id);

-- Pull effects: one per (source event, scope), at its stream position.
CREATE TABLE synchro.scope_effects (
  scope_id text NOT NULL,
  stream_generation text NOT NULL,
  commit_lsn pg_lsn NOT NULL,
  event_ordinal bigint NOT NULL CHECK (event_ordinal >= 0),
  effect_ordinal integer NOT NULL CHECK (effect_ordinal >= 0),
  table_id text NOT NULL,
  pk_text text NOT NULL,
  pk_bytes bytea NOT NULL,
  op_rank smallint NOT NULL CHECK (op_rank IN (0, 1)),
  op text NOT NULL CHECK (op IN ('upsert', 'delete')),
  server_version text NOT NULL,
  row_wire jsonb,
  PRIMARY KEY (scope_id, stream_generation, commit_lsn, event_ordinal, effect_ordinal),
  CHECK ((op = 'upsert') = (op_rank = 1)),
  CHECK (op = 'delete' OR row_wire IS NOT NULL)
);

-- Current scope contents (what a rebuild stages).
CREATE TABLE synchro.scope_rows (
  scope_id text NOT NULL,
  table_id text NOT NULL,
  pk_bytes bytea NOT NULL,
  pk_text text NOT NULL,
  row_wire jsonb NOT NULL,
  server_version text NOT NULL,
  PRIMARY KEY (scope_id, table_id, pk_bytes)
);

-- A transaction the worker could not materialize. At most one active; it blocks everything after it.
CREATE TABLE synchro.wal_poison (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  stream_generation text NOT NULL,
  commit_lsn pg_lsn NOT NULL,
  failure_class text NOT NULL CHECK (failure_class IN ('decode_failed', 'validation_failed', 'fence_correlation_failed',
    'materialization_failed', 'projection_write_failed', 'scope_evaluation_failed', 'transaction_commit_failed',
    'truncate_unsupported', 'registered_relation_drift')),
  failure_detail text NOT NULL CHECK (octet_length(failure_detail) <= 512),
  table_id text,
  lifecycle text NOT NULL CHECK (lifecycle IN ('active', 'repaired', 'reset')),
  poisoned_at timestamptz NOT NULL DEFAULT now(),
  retry_requested_at timestamptz,
  resolved_at timestamptz,
  attempt_count integer NOT NULL DEFAULT 1 CHECK (attempt_count > 0),
  CHECK ((resolved_at IS NULL) = (lifecycle = 'active'))
);
CREATE UNIQUE INDEX wal_poison_one_active ON synchro.wal_poison ((true)) WHERE lifecycle = 'active';

-- Operator stream resets (reference/server/capture/stream-reset.ts). At most one
-- is in flight; an activated reset names the slot and generation it installed.
CREATE TABLE synchro.stream_resets (
  reset_id uuid PRIMARY KEY,
  plugin text NOT NULL DEFAULT 'pgoutput' CHECK (plugin = 'pgoutput'),
  candidate_slot_name text NOT NULL CHECK (candidate_slot_name ~ '^[a-z0-9_]{1,63}$'),
  exported_snapshot_name text CHECK (exported_snapshot_name ~ '^[A-Za-z0-9_-]{1,128}$'),
  consistent_point pg_lsn,
  activation_barrier pg_lsn,
  previous_generation text,
  target_generation text,
  lifecycle text NOT NULL CHECK (lifecycle IN ('preparing', 'baseline_staged', 'activated', 'aborted')),
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  CHECK ((lifecycle = 'activated') = (target_generation IS NOT NULL AND activation_barrier IS NOT NULL))
);
CREATE UNIQUE INDEX stream_resets_one_in_flight ON synchro.stream_resets ((true)) WHERE lifecycle IN ('preparing', 'baseline_staged');

CREATE TABLE synchro.wal_worker_state (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  state text NOT NULL CHECK (state IN ('starting', 'running', 'blocked', 'stopped')),
  heartbeat_at timestamptz NOT NULL DEFAULT now()
);

-- Asks the worker to retry the active poison transaction with the same replay identity.
CREATE FUNCTION synchro.synchro_retry_wal_poison() RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_id bigint;
BEGIN
  UPDATE synchro.wal_poison SET retry_requested_at = clock_timestamp()
   WHERE lifecycle = 'active' AND failure_class <> 'truncate_unsupported'
   RETURNING id INTO v_id;
  PERFORM pg_notify('synchro_capture', '');
  RETURN v_id IS NOT NULL;
END
$$;

-- Re-asserts the committed state of every row of one registered table as
-- transactional logical messages, so the worker can project rows that were
-- written before capture could see them. Writers are locked out meanwhile,
-- so no later-committing write can be overtaken by the baseline.
CREATE FUNCTION synchro.capture_baseline(p_table text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_rel record;
  v_n bigint;
BEGIN
  SELECT physical_relation_oid, pk_column INTO v_rel FROM synchro.relations WHERE table_id = p_table AND active;
  IF NOT FOUND THEN
    RETURN 0;
  END IF;
  EXECUTE format('LOCK TABLE %s IN SHARE MODE', v_rel.physical_relation_oid::regclass);
  EXECUTE format(
    'SELECT count(pg_logical_emit_message(true, ''synchro_baseline'',
        jsonb_build_object(''t'', $1, ''k'', to_jsonb(t) ->> $2, ''v'', rv.server_version, ''s'', rv.state, ''row'', to_jsonb(t))::text))
       FROM %s t JOIN synchro.row_versions rv ON rv.table_id = $1 AND rv.pk_text = to_jsonb(t) ->> $2', v_rel.physical_relation_oid::regclass)
  INTO v_n USING p_table, v_rel.pk_column;
  PERFORM pg_notify('synchro_capture', '');
  RETURN v_n;
END
$$;

REVOKE EXECUTE ON FUNCTION synchro.synchro_retry_wal_poison() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.capture_baseline(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.synchro_retry_wal_poison() TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.capture_baseline(text) TO synchro_operator;

-- Per registered table, a projection relation with the synced columns and
-- their types, written only by the capture worker: membership functions read
-- the projected row state here (synchro_projection.<relation name>).
REVOKE ALL ON SCHEMA synchro_projection FROM PUBLIC;
GRANT USAGE ON SCHEMA synchro_projection TO synchro_operator, synchro_worker;

CREATE FUNCTION synchro.projection_create(p_table text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_rel record;
  v_cols text;
BEGIN
  SELECT physical_relation, physical_relation_oid INTO v_rel FROM synchro.relations WHERE table_id = p_table;
  SELECT string_agg(quote_ident(column_name), ', ' ORDER BY field_id COLLATE "C") INTO v_cols FROM synchro.fields WHERE table_id = p_table;
  EXECUTE format('DROP TABLE IF EXISTS synchro_projection.%I', v_rel.physical_relation);
  EXECUTE format('CREATE TABLE synchro_projection.%I AS SELECT %s FROM %s WITH NO DATA', v_rel.physical_relation, v_cols, v_rel.physical_relation_oid::regclass);
  EXECUTE format('GRANT SELECT ON synchro_projection.%I TO synchro_operator, synchro_worker', v_rel.physical_relation);
END
$$;
REVOKE EXECUTE ON FUNCTION synchro.projection_create(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.projection_create(text) TO synchro_operator;

-- Limits for readiness, stored as configured (text, like the extension's settings): each must read as a
-- finite number > 0 (synchro.positive_limit, 055), else its check reports invalid_limit.
CREATE TABLE synchro.capture_limits (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  max_heartbeat_age_seconds text,
  max_wal_lag_bytes text,
  max_wal_lag_seconds text
);
INSERT INTO synchro.capture_limits VALUES (true, '60', '67108864', '60');
ALTER TABLE synchro.wal_worker_state ADD COLUMN caught_up_at timestamptz NOT NULL DEFAULT now();

-- The nine capture checks and their observations.
CREATE FUNCTION synchro.capture_health() RETURNS jsonb
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  ok constant jsonb := jsonb_build_object('state', 'ok', 'reason', 'ok');
  v_checks jsonb := '{}'::jsonb;
  v_lim record;
  v_prog record;
  v_slot record;
  v_slot_before pg_lsn;
  v_worker record;
  v_hb_age double precision;
  v_lag_bytes numeric;
  v_lag_seconds double precision;
  v_bad boolean;
  f constant text := 'failed';
BEGIN
  -- A limit that is unset or does not read as a finite positive number is NULL here, and its check fails.
  SELECT synchro.positive_limit(max_heartbeat_age_seconds) AS max_heartbeat_age_seconds, synchro.positive_limit(max_wal_lag_bytes) AS max_wal_lag_bytes,
         synchro.positive_limit(max_wal_lag_seconds) AS max_wal_lag_seconds
    INTO v_lim FROM synchro.capture_limits;
  -- The slot's position lives in shared memory and moves while this runs; the
  -- progress row is read from a snapshot. The worker keeps, at every instant,
  -- acknowledged <= slot position <= processed, and all three only grow, so the
  -- slot is read once before the progress row (a lower bound of its position
  -- then) and once after (an upper bound). VOLATILE gives each statement its own
  -- snapshot, so the progress row is not older than the first slot read.
  SELECT s.confirmed_flush_lsn INTO v_slot_before FROM pg_replication_slots s
   WHERE s.slot_name = (SELECT slot_name FROM synchro.wal_progress);
  SELECT * INTO v_prog FROM synchro.wal_progress;
  SELECT s.* INTO v_slot FROM pg_replication_slots s WHERE s.slot_name = v_prog.slot_name;
  SELECT * INTO v_worker FROM synchro.wal_worker_state;

  -- Publication: exactly the active registered relations, whole rows, no filters.
  SELECT EXISTS (
      SELECT physical_relation_oid FROM synchro.relations WHERE active
      EXCEPT SELECT prrelid FROM pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid WHERE p.pubname = 'synchro_capture')
    OR EXISTS (
      SELECT prrelid FROM pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid WHERE p.pubname = 'synchro_capture'
      EXCEPT SELECT physical_relation_oid FROM synchro.relations WHERE active)
    OR EXISTS (SELECT 1 FROM pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid
                WHERE p.pubname = 'synchro_capture' AND (pr.prqual IS NOT NULL OR pr.prattrs IS NOT NULL))
    OR NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = 'synchro_capture' AND pubinsert AND pubupdate AND pubdelete AND NOT puballtables)
    INTO v_bad;
  v_checks := v_checks || jsonb_build_object('publication', CASE WHEN v_bad
    THEN jsonb_build_object('state', f, 'reason', 'publication_mismatch') ELSE ok END);

  v_checks := v_checks || jsonb_build_object('replication_slot', CASE
    WHEN v_prog IS NULL OR v_slot IS NULL OR v_slot.plugin IS DISTINCT FROM 'pgoutput' OR v_slot.temporary
      OR v_slot.slot_type <> 'logical' OR v_slot.database IS DISTINCT FROM current_database() OR v_slot.wal_status = 'lost'
      OR v_slot.invalidation_reason IS NOT NULL
      THEN jsonb_build_object('state', f, 'reason', 'replication_slot_invalid') ELSE ok END);

  -- A reset that has started but not activated leaves the old stream blocked.
  v_checks := v_checks || jsonb_build_object('stream_reset', CASE
    WHEN v_prog IS NULL THEN jsonb_build_object('state', 'unknown', 'reason', 'health_query_unavailable')
    WHEN EXISTS (SELECT 1 FROM synchro.stream_resets WHERE lifecycle IN ('preparing', 'baseline_staged', 'catching_up'))
      THEN jsonb_build_object('state', f, 'reason', 'stream_reset_incomplete')
    ELSE ok END);

  v_checks := v_checks || jsonb_build_object('poison', CASE
    WHEN EXISTS (SELECT 1 FROM synchro.wal_poison WHERE lifecycle = 'active')
      THEN jsonb_build_object('state', f, 'reason', 'blocking_poison') ELSE ok END);

  v_checks := v_checks || jsonb_build_object('materialization_progress', CASE
    WHEN v_prog IS NULL OR v_slot IS NULL OR v_slot.confirmed_flush_lsn IS NULL OR v_prog.acknowledged_end_lsn IS NULL
      OR v_slot.confirmed_flush_lsn < v_prog.acknowledged_end_lsn OR v_slot_before > v_prog.processed_end_lsn
      OR (v_prog.materialized_end_lsn IS NOT NULL AND v_prog.materialized_end_lsn > v_prog.processed_end_lsn)
      THEN jsonb_build_object('state', f, 'reason', 'slot_acknowledgement_invalid') ELSE ok END);

  v_checks := v_checks || jsonb_build_object('worker', CASE
    WHEN v_worker IS NULL OR v_worker.state NOT IN ('running', 'blocked')
      OR NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'synchro-capture')
      THEN jsonb_build_object('state', f, 'reason', 'worker_state_invalid') ELSE ok END);

  -- The server's clock (054-readiness-clock-and-progress.sql), so a moved clock ages what the database stamped.
  v_hb_age := extract(epoch FROM synchro.server_now() - v_worker.heartbeat_at);
  v_checks := v_checks || jsonb_build_object('heartbeat', CASE
    WHEN coalesce(v_lim.max_heartbeat_age_seconds, 0) <= 0 THEN jsonb_build_object('state', f, 'reason', 'invalid_limit')
    -- A heartbeat dated after now is as untrustworthy as a stale one.
    WHEN v_hb_age IS NULL OR v_hb_age < 0 OR v_hb_age > v_lim.max_heartbeat_age_seconds THEN jsonb_build_object('state', f, 'reason', 'heartbeat_stale')
    ELSE ok END);

  v_lag_bytes := pg_wal_lsn_diff(pg_current_wal_lsn(), v_slot.confirmed_flush_lsn);
  v_checks := v_checks || jsonb_build_object('wal_byte_lag', CASE
    WHEN coalesce(v_lim.max_wal_lag_bytes, 0) <= 0 THEN jsonb_build_object('state', f, 'reason', 'invalid_limit')
    WHEN v_lag_bytes IS NULL OR v_lag_bytes > v_lim.max_wal_lag_bytes THEN jsonb_build_object('state', f, 'reason', 'wal_lag_exceeded')
    ELSE ok END);

  -- Approximation: unmaterialized WAL is as old as the worker's last caught-up moment.
  -- Behind an active poison the age of the oldest unmaterialized commit is not known: NULL, never 0.
  v_lag_seconds := CASE WHEN v_lag_bytes IS NULL OR EXISTS (SELECT 1 FROM synchro.wal_poison WHERE lifecycle = 'active') THEN NULL
    WHEN v_lag_bytes <= 0 THEN 0
    ELSE extract(epoch FROM synchro.server_now() - v_worker.caught_up_at) END;
  v_checks := v_checks || jsonb_build_object('wal_time_lag', CASE
    WHEN coalesce(v_lim.max_wal_lag_seconds, 0) <= 0 THEN jsonb_build_object('state', f, 'reason', 'invalid_limit')
    WHEN v_lag_seconds IS NULL OR v_lag_seconds > v_lim.max_wal_lag_seconds THEN jsonb_build_object('state', f, 'reason', 'wal_lag_exceeded')
    ELSE ok END);

  RETURN jsonb_build_object('checks', v_checks, 'observations', jsonb_build_object(
    'heartbeat_age_seconds', v_hb_age, 'wal_lag_bytes', v_lag_bytes, 'wal_lag_seconds', v_lag_seconds));
END
$$;
REVOKE EXECUTE ON FUNCTION synchro.capture_health() FROM PUBLIC;
