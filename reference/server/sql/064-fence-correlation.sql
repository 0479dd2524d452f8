-- One to one version fence correlation (SYNC-CAP-012, decisions 265-268).
--
-- Every fence now carries its own identity: a fence ID (a fresh UUID), the
-- transaction-local registered-DML ordinal (1, 2, ... in firing order), the
-- registration kind and the relation it fences. The worker pairs, per row
-- identity, the k-th row event with the fence of the k-th lowest ordinal and
-- refuses anything that does not pair one to one (capture/fence-correlation.ts).
--
-- Two source-side guards keep that order meaningful:
--  * a fence that fires after a nested statement already changed (and fenced)
--    its row fails the transaction with 27000: the row's visible version is the
--    one an earlier-firing fence already recorded;
--  * an insert into a registered relation whose storage was replaced in the
--    same transaction (the only state in which COPY ... FREEZE can run) fails
--    with 0A000: a frozen row is visible before its fence can be ordered.

-- What the worker keeps of each fence it materialized: a fence ID is never
-- accepted twice, and the ordinal and kind stay inspectable beside the event.
ALTER TABLE synchro.wal_events
  ADD COLUMN fence_id uuid UNIQUE,
  ADD COLUMN dml_ordinal bigint CHECK (dml_ordinal >= 1),
  ADD COLUMN registration_kind text CHECK (registration_kind IN ('synced', 'capture_dependency')),
  -- The fence message as decoded (its identity members), for inspection.
  ADD COLUMN fence_message jsonb;
-- A fence's version must be new; the worker looks up versions it is offered.
CREATE INDEX wal_events_server_version ON synchro.wal_events (server_version);

-- The transaction of the last fence of an identity. Within that transaction,
-- the command ID at which the fence wrote the version record (the record's
-- system column cmin) says when that fence ran (decision 429).
ALTER TABLE synchro.row_versions
  ADD COLUMN fenced_xact xid8;

-- AFTER each row operation. Arguments as before: table_id, key column,
-- deleted-at column ('' when the table has none).
CREATE OR REPLACE FUNCTION synchro.synchro_capture_fence() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_table text := TG_ARGV[0];
  v_key text := TG_ARGV[1];
  v_deleted_col text := TG_ARGV[2];
  v_new jsonb;
  v_old jsonb;
  v_pk text;
  v_state text;
  v_prior_state text;
  v_prior_xact xid8;
  v_prior_cmin bigint;
  v_rel record;
  v_cmin bigint;
  v_xact xid8 := pg_current_xact_id();
  v_ordinal bigint := coalesce(nullif(current_setting('synchro.dml_ordinal', true), '')::bigint, 0) + 1;
  v_fence uuid := gen_random_uuid();
  v_version text := 'v' || replace(gen_random_uuid()::text, '-', '');
  v_mutation uuid := nullif(current_setting('synchro.mutation_id', true), '')::uuid;
  v_message jsonb;
BEGIN
  SELECT r.relation_id, r.kind, r.physical_schema, r.physical_relation, r.physical_relation_oid
    INTO v_rel FROM synchro.relations r WHERE r.table_id = v_table;
  IF TG_OP = 'DELETE' THEN
    v_old := to_jsonb(OLD);
    v_pk := v_old ->> v_key;
    v_state := 'deleted';
  ELSE
    v_new := to_jsonb(NEW);
    v_pk := v_new ->> v_key;
    IF TG_OP = 'UPDATE' THEN v_old := to_jsonb(OLD); END IF;
    IF TG_OP = 'UPDATE' AND v_new -> v_key IS DISTINCT FROM to_jsonb(OLD) -> v_key THEN
      -- A later BEFORE trigger or a partition move changed the key after the guard ran.
      RAISE EXCEPTION 'the primary key of a registered relation cannot change' USING ERRCODE = '23514';
    END IF;
    v_state := CASE WHEN v_deleted_col <> '' AND v_new ->> v_deleted_col IS NOT NULL THEN 'deleted' ELSE 'live' END;
    IF TG_OP = 'INSERT' AND (SELECT c.xmin = v_xact::xid AND c.relfilenode <> c.oid FROM pg_class c WHERE c.oid = TG_RELID) THEN
      -- The relation's storage was replaced in this transaction (its catalog row written here and
      -- its file no longer the one it was created with: TRUNCATE or a rewrite), which COPY ... FREEZE
      -- requires: frozen rows defeat the order check, so no insert is fenced until that transaction
      -- ends. A creation or registration in the same transaction keeps the first file and passes.
      RAISE EXCEPTION 'a registered relation whose storage changed in this transaction accepts no insert (COPY FREEZE)' USING ERRCODE = '0A000';
    END IF;
  END IF;

  -- What the identity's version record held before this fence, and the command ID at which it
  -- was written (its cmin; a fence's own write is the only one that changes an existing record).
  SELECT state, fenced_xact, cmin::text::bigint INTO v_prior_state, v_prior_xact, v_prior_cmin
    FROM synchro.row_versions WHERE table_id = v_table AND pk_text = v_pk FOR UPDATE;
  -- When an earlier fence of this transaction already wrote that record, the row's visible version
  -- must be newer than that record. Command IDs only grow within a transaction, so a version
  -- written before the earlier fence's record is one that fence already covered: the change this
  -- fence stands for was overwritten by a nested statement before this fence fired, and the order
  -- of the fences is lost. A first fence of the identity in its transaction has nothing to compare
  -- with and skips the lookup, a statement planned afresh on every call (decision 429).
  IF v_prior_xact = v_xact THEN
    EXECUTE format('SELECT cmin::text::bigint FROM %s WHERE %I = ($1).%I', v_rel.physical_relation_oid::regclass, v_key, v_key)
      INTO v_cmin USING CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
    -- A row no longer visible (deleted) leaves v_cmin NULL and nothing to compare.
    IF v_cmin < v_prior_cmin THEN
      RAISE EXCEPTION 'a nested statement changed a registered row before the fence of an earlier change fired' USING ERRCODE = '27000';
    END IF;
  END IF;
  IF v_prior_state = 'deleted' AND v_state = 'live' THEN
    -- A deleted identity stays deleted: no resurrection through any write path.
    RAISE EXCEPTION 'a deleted row identity cannot be revived' USING ERRCODE = '23514';
  END IF;
  IF v_prior_state IS NOT NULL THEN
    -- The record exists and is locked (above): updated in place, without the insert attempt that an
    -- upsert makes first and that checks the new record's constraints once more (decision 434).
    UPDATE synchro.row_versions
       SET state = v_state, server_version = v_version, mutation_id = v_mutation, changed_at = clock_timestamp(), fenced_xact = v_xact
     WHERE table_id = v_table AND pk_text = v_pk;
  ELSE
    INSERT INTO synchro.row_versions AS rv (table_id, pk_text, state, server_version, mutation_id, changed_at, fenced_xact)
    VALUES (v_table, v_pk, v_state, v_version, v_mutation, clock_timestamp(), v_xact)
    ON CONFLICT (table_id, pk_text) DO UPDATE
      SET state = excluded.state, server_version = excluded.server_version,
          mutation_id = excluded.mutation_id, changed_at = excluded.changed_at, fenced_xact = excluded.fenced_xact;
  END IF;
  PERFORM set_config('synchro.dml_ordinal', v_ordinal::text, true);

  -- The capture worker pairs this message with the row event of the same identity by ordinal.
  v_message := jsonb_build_object(
    'fence_id', v_fence, 'dml_ordinal', v_ordinal, 'registration_kind', v_rel.kind,
    'relation_id', v_rel.relation_id, 'physical_schema', v_rel.physical_schema,
    'physical_relation', v_rel.physical_relation, 'physical_relation_oid', v_rel.physical_relation_oid::int8,
    'operation', lower(TG_OP), 'row_version', v_version, 'row_state', v_state);
  IF v_rel.kind = 'synced' THEN
    v_message := v_message || jsonb_build_object('table_id', v_table,
      'old_record_id', v_old ->> v_key, 'new_record_id', v_new ->> v_key);
  ELSE
    v_message := v_message || jsonb_build_object(
      'old_capture_key', CASE WHEN v_old IS NULL THEN NULL ELSE jsonb_build_object(v_key, v_old -> v_key) END,
      'new_capture_key', CASE WHEN v_new IS NULL THEN NULL ELSE jsonb_build_object(v_key, v_new -> v_key) END);
  END IF;
  PERFORM pg_logical_emit_message(true, 'synchro_fence', v_message::text);
  PERFORM pg_notify('synchro_capture', '');
  RETURN NULL;
END
$$;
