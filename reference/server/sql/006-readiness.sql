-- Fail-closed readiness. Each check is ok, failed or unknown; the server is
-- ready only when every check is ok. The capture checks (publication, slot,
-- worker, progress, lag) are computed by synchro.capture_health().

CREATE FUNCTION synchro.synchro_health_detail() RETURNS jsonb
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
                      'replication_slot', 'stream_reset', 'poison', 'materialization_progress', 'worker', 'heartbeat', 'wal_byte_lag', 'wal_time_lag']) AS r;
  RETURN jsonb_build_object('ready', coalesce(v_ready, false), 'checks', v_checks, 'observations', v_capture -> 'observations');
END
$$;

CREATE FUNCTION synchro.synchro_readiness() RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
  SELECT jsonb_build_object('ready', coalesce((synchro.synchro_health_detail() ->> 'ready')::boolean, false));
$$;

-- The current manifest as stored (NULL before the first publication).
CREATE FUNCTION synchro.synchro_schema_manifest() RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
  SELECT jsonb_build_object('schema_version', m.schema_version, 'schema_hash', m.schema_hash,
    'server_time', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'manifest', m.body_text::jsonb)
  FROM synchro.manifests m ORDER BY m.schema_version DESC LIMIT 1;
$$;

-- Synced tables only: a capture dependency has no client surface.
CREATE FUNCTION synchro.synchro_tables() RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
  SELECT jsonb_build_object(
    'tables', coalesce((SELECT jsonb_agg(jsonb_build_object(
        'table_name', r.physical_relation, 'push_policy', r.push_policy, 'dependencies', '[]'::jsonb,
        'pk_column', r.pk_column, 'updated_at_column', r.updated_at_column, 'deleted_at_column', r.deleted_at_column,
        'sync_columns', (SELECT coalesce(jsonb_agg(f.column_name ORDER BY f.column_name), '[]'::jsonb) FROM synchro.fields f WHERE f.table_id = r.table_id),
        'exclude_columns', '[]'::jsonb) ORDER BY r.physical_relation COLLATE "C")
      FROM synchro.relations r WHERE r.active AND r.kind = 'synced'), '[]'::jsonb),
    'server_time', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'schema_version', m.schema_version, 'schema_hash', m.schema_hash)
  FROM (SELECT schema_version, schema_hash FROM synchro.manifests ORDER BY schema_version DESC LIMIT 1) m;
$$;
