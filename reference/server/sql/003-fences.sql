-- Version fences for registered relations. Every write path (push or direct
-- SQL) goes through these triggers, so both share one version per identity.

-- BEFORE UPDATE: a key never changes; an identity change is a delete plus an insert.
CREATE FUNCTION synchro.synchro_primary_key_guard() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
BEGIN
  IF to_jsonb(NEW) -> TG_ARGV[0] IS DISTINCT FROM to_jsonb(OLD) -> TG_ARGV[0] THEN
    RAISE EXCEPTION 'the primary key of a registered relation cannot change' USING ERRCODE = '23514';
  END IF;
  RETURN NEW;
END
$$;

-- AFTER each row operation: allocate a fresh opaque version and move the fence.
-- Arguments: table_id, key column, deleted-at column ('' when the table has none).
CREATE FUNCTION synchro.synchro_capture_fence() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_table text := TG_ARGV[0];
  v_key text := TG_ARGV[1];
  v_deleted_col text := TG_ARGV[2];
  v_new jsonb;
  v_pk text;
  v_state text;
  v_prior text;
  v_version text := 'v' || replace(gen_random_uuid()::text, '-', '');
  v_mutation uuid := nullif(current_setting('synchro.mutation_id', true), '')::uuid;
BEGIN
  IF TG_OP = 'DELETE' THEN
    v_pk := to_jsonb(OLD) ->> v_key;
    v_state := 'deleted';
  ELSE
    v_new := to_jsonb(NEW);
    v_pk := v_new ->> v_key;
    IF TG_OP = 'UPDATE' AND v_new -> v_key IS DISTINCT FROM to_jsonb(OLD) -> v_key THEN
      -- A later BEFORE trigger or a partition move changed the key after the guard ran.
      RAISE EXCEPTION 'the primary key of a registered relation cannot change' USING ERRCODE = '23514';
    END IF;
    v_state := CASE WHEN v_deleted_col <> '' AND v_new ->> v_deleted_col IS NOT NULL THEN 'deleted' ELSE 'live' END;
  END IF;

  SELECT state INTO v_prior FROM synchro.row_versions WHERE table_id = v_table AND pk_text = v_pk FOR UPDATE;
  IF v_prior = 'deleted' AND v_state = 'live' THEN
    -- A deleted identity stays deleted: no resurrection through any write path.
    RAISE EXCEPTION 'a deleted row identity cannot be revived' USING ERRCODE = '23514';
  END IF;
  INSERT INTO synchro.row_versions AS rv (table_id, pk_text, state, server_version, mutation_id, changed_at)
  VALUES (v_table, v_pk, v_state, v_version, v_mutation, clock_timestamp())
  ON CONFLICT (table_id, pk_text) DO UPDATE
    SET state = excluded.state, server_version = excluded.server_version,
        mutation_id = excluded.mutation_id, changed_at = excluded.changed_at;
  -- The capture worker correlates each decoded row event with this fence by row identity.
  PERFORM pg_logical_emit_message(true, 'synchro_fence',
    jsonb_build_object('t', v_table, 'k', v_pk, 'v', v_version, 's', v_state)::text);
  PERFORM pg_notify('synchro_capture', '');
  RETURN NULL;
END
$$;

CREATE FUNCTION synchro.synchro_capture_truncate_guard() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
BEGIN
  -- TRUNCATE would remove rows without per-row fences.
  RAISE EXCEPTION 'TRUNCATE of a registered relation is not supported' USING ERRCODE = '0A000';
END
$$;
