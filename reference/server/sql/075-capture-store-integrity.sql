-- Captured effects that failed verification while a pull served them
-- (SYNC-PULL-004). A pull that finds a selected effect without its projection
-- (an upsert whose stored row is absent or not an object) or whose stored row
-- digest differs from the digest of its stored row fails the whole page with
-- 500 sync_integrity_failure, and records the effect here in a transaction of
-- its own (the page's transaction rolls back). Readiness then stays unready
-- while the store still holds the damage that was found: the effect is still
-- served (present, not superseded) and still has no projection, or still
-- carries the very digest that did not match. Repairing the effect, or a later
-- effect of the same key superseding it, makes the record moot; the next pull
-- verifies again, so a different damage is found and recorded anew.
CREATE TABLE synchro.capture_store_failures (
  scope_id text NOT NULL,
  stream_generation text NOT NULL,
  commit_lsn pg_lsn NOT NULL,
  event_ordinal bigint NOT NULL,
  effect_ordinal integer NOT NULL,
  failure text NOT NULL CHECK (failure IN ('projection_missing', 'digest_mismatch')),
  -- The stored digest found not to match (digest_mismatch only).
  row_digest bytea CHECK ((failure = 'digest_mismatch') = (row_digest IS NOT NULL)),
  detected_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (scope_id, stream_generation, commit_lsn, event_ordinal, effect_ordinal, failure)
);

-- Whether a recorded failure still describes what the store holds.
CREATE FUNCTION synchro.capture_store_damaged() RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
  SELECT EXISTS (
    SELECT 1 FROM synchro.capture_store_failures f
      JOIN synchro.scope_effects e USING (scope_id, stream_generation, commit_lsn, event_ordinal, effect_ordinal)
     WHERE NOT e.superseded
       AND CASE f.failure
             WHEN 'projection_missing' THEN e.op = 'upsert' AND (e.row_wire IS NULL OR jsonb_typeof(e.row_wire) <> 'object')
             ELSE e.row_digest IS NOT DISTINCT FROM f.row_digest
           END);
$$;
REVOKE EXECUTE ON FUNCTION synchro.capture_store_damaged() FROM PUBLIC;

-- Records a failure a pull found, only while the effect still shows it (a
-- repair that landed after the pull's read leaves nothing to record).
CREATE FUNCTION synchro.capture_store_record_failure(p_scope text, p_generation text, p_lsn pg_lsn, p_event bigint, p_effect integer, p_failure text, p_digest bytea)
RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
  INSERT INTO synchro.capture_store_failures (scope_id, stream_generation, commit_lsn, event_ordinal, effect_ordinal, failure, row_digest)
  SELECT e.scope_id, e.stream_generation, e.commit_lsn, e.event_ordinal, e.effect_ordinal, p_failure, CASE WHEN p_failure = 'digest_mismatch' THEN p_digest END
    FROM synchro.scope_effects e
   WHERE e.scope_id = p_scope AND e.stream_generation = p_generation AND e.commit_lsn = p_lsn AND e.event_ordinal = p_event AND e.effect_ordinal = p_effect
     AND CASE p_failure
           WHEN 'projection_missing' THEN e.op = 'upsert' AND (e.row_wire IS NULL OR jsonb_typeof(e.row_wire) <> 'object')
           ELSE e.row_digest IS NOT DISTINCT FROM p_digest
         END
  ON CONFLICT (scope_id, stream_generation, commit_lsn, event_ordinal, effect_ordinal, failure)
    DO UPDATE SET row_digest = excluded.row_digest, detected_at = excluded.detected_at
  RETURNING true;
$$;
REVOKE EXECUTE ON FUNCTION synchro.capture_store_record_failure(text, text, pg_lsn, bigint, integer, text, bytea) FROM PUBLIC;

-- Readiness as 006 computes it, with the capture_store check required as well.
CREATE OR REPLACE FUNCTION synchro.synchro_health_detail() RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_checks jsonb := '{}'::jsonb;
  v_name text;
  v_gen bigint;
  v_checked bigint;
  v_bad int;
  v_ready boolean;
  v_capture jsonb;
BEGIN
  v_checks := v_checks || jsonb_build_object('database_contract', jsonb_build_object('state', 'ok', 'reason', 'ok'));

  SELECT max(generation) INTO v_gen FROM synchro.registry_generations WHERE state = 'active' AND validated;
  v_checks := v_checks || jsonb_build_object('registry_generation', CASE
    WHEN EXISTS (SELECT 1 FROM synchro.registry_generations WHERE NOT validated)
      THEN jsonb_build_object('state', 'failed', 'reason', 'registry_generation_invalid')
    ELSE jsonb_build_object('state', 'ok', 'reason', 'ok') END);

  SELECT checked_generation INTO v_checked FROM synchro.manifest_state;
  v_checks := v_checks || jsonb_build_object('schema_generation', CASE
    WHEN NOT EXISTS (SELECT 1 FROM synchro.manifests) OR v_checked IS DISTINCT FROM coalesce(v_gen, 0)
      THEN jsonb_build_object('state', 'unknown', 'reason', 'schema_generation_missing')
    ELSE jsonb_build_object('state', 'ok', 'reason', 'ok') END);

  SELECT count(*) INTO v_bad FROM synchro.relations r
   WHERE r.active AND NOT EXISTS (
     SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.oid = r.physical_relation_oid AND n.nspname = r.physical_schema AND c.relname = r.physical_relation
        AND c.relreplident = 'd'
        -- The key is still the sole column of an immediate primary key, which replica identity DEFAULT uses.
        AND EXISTS (SELECT 1 FROM pg_constraint k JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = r.pk_column
                     WHERE k.conrelid = c.oid AND k.contype = 'p' AND NOT k.condeferrable AND k.conkey = ARRAY[a.attnum]));
  v_checks := v_checks || jsonb_build_object('relation_identity', CASE WHEN v_bad = 0
    THEN jsonb_build_object('state', 'ok', 'reason', 'ok')
    ELSE jsonb_build_object('state', 'failed', 'reason', 'relation_identity_invalid') END);

  SELECT count(*) INTO v_bad FROM synchro.relations r
   WHERE r.active AND (SELECT count(*) FROM pg_trigger t
                        WHERE t.tgrelid = r.physical_relation_oid AND t.tgenabled = 'O'
                          AND t.tgname IN ('synchro_primary_key_guard', 'synchro_capture_fence', 'synchro_capture_truncate_guard')) <> 3;
  v_checks := v_checks || jsonb_build_object('capture_triggers', CASE WHEN v_bad = 0
    THEN jsonb_build_object('state', 'ok', 'reason', 'ok')
    ELSE jsonb_build_object('state', 'failed', 'reason', 'capture_triggers_invalid') END);

  -- A captured effect a pull found broken (075) keeps the server unready while the store still holds that damage.
  v_checks := v_checks || jsonb_build_object('capture_store', CASE WHEN synchro.capture_store_damaged()
    THEN jsonb_build_object('state', 'failed', 'reason', 'capture_store_invalid')
    ELSE jsonb_build_object('state', 'ok', 'reason', 'ok') END);

  -- Capture checks (tables from 008-capture.sql). Every failure names its check; nothing here shows row data.
  v_capture := synchro.capture_health();
  v_checks := v_checks || (v_capture -> 'checks');

  -- Forced states (055), for certification only; none after install.
  SELECT v_checks - coalesce(array_agg(o.check_name) FILTER (WHERE o.state IS NULL), '{}')
         || coalesce(jsonb_object_agg(o.check_name, jsonb_build_object('state', o.state, 'reason', 'forced')) FILTER (WHERE o.state IS NOT NULL), '{}')
    INTO v_checks FROM synchro.health_check_overrides o;

  -- Ready only when every required check is present and ok: a missing check is not a healthy one.
  SELECT bool_and(coalesce(v_checks -> r ->> 'state', 'absent') = 'ok') INTO v_ready
    FROM unnest(ARRAY['database_contract', 'registry_generation', 'schema_generation', 'relation_identity', 'publication', 'capture_triggers',
                      'replication_slot', 'stream_reset', 'poison', 'materialization_progress', 'worker', 'heartbeat', 'wal_byte_lag', 'wal_time_lag',
                      'capture_store']) AS r;
  RETURN jsonb_build_object('ready', coalesce(v_ready, false), 'checks', v_checks, 'observations', v_capture -> 'observations');
END
$$;
