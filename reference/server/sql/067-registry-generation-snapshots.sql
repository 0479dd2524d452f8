-- Commit-ordered registry activation (SYNC-CAP-008, decision 272).
--
-- Every registry generation keeps what the capture worker reads a row event
-- under: the active relations and their fields as they stood when the
-- generation was complete. The worker applies a generation only where its
-- activation message (`synchro_registry`, payload the generation number)
-- stands in the stream, so one WAL is read under the same rules whatever the
-- timing of notifications, polls or restarts.

ALTER TABLE synchro.registry_generations ADD COLUMN snapshot jsonb;

-- The registry as it stands in the calling transaction.
CREATE FUNCTION synchro.registry_snapshot_now() RETURNS jsonb
LANGUAGE sql STABLE SET search_path = pg_catalog, synchro AS $$
  SELECT jsonb_build_object(
    'relations', coalesce((SELECT jsonb_agg(to_jsonb(r) ORDER BY r.table_id COLLATE "C") FROM synchro.relations r WHERE r.active), '[]'::jsonb),
    'fields', coalesce((SELECT jsonb_agg(to_jsonb(f) ORDER BY f.table_id COLLATE "C", f.field_id COLLATE "C")
                          FROM synchro.fields f JOIN synchro.relations r ON r.table_id = f.table_id AND r.active), '[]'::jsonb))
$$;

-- Registry functions open a generation before they write the change, so a
-- generation is complete when the next one opens (several registry changes in
-- one transaction) or, for the last, when its transaction commits.
CREATE FUNCTION synchro.registry_generation_opened() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
BEGIN
  UPDATE synchro.registry_generations g SET snapshot = synchro.registry_snapshot_now()
   WHERE g.snapshot IS NULL
     AND g.generation = (SELECT max(p.generation) FROM synchro.registry_generations p WHERE p.generation < NEW.generation);
  RETURN NEW;
END
$$;
CREATE TRIGGER registry_generation_opened BEFORE INSERT ON synchro.registry_generations
  FOR EACH ROW EXECUTE FUNCTION synchro.registry_generation_opened();

CREATE FUNCTION synchro.registry_generation_sealed() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
BEGIN
  UPDATE synchro.registry_generations SET snapshot = synchro.registry_snapshot_now()
   WHERE generation = NEW.generation AND snapshot IS NULL;
  RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER registry_generation_sealed AFTER INSERT ON synchro.registry_generations
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION synchro.registry_generation_sealed();

-- The generation the worker reads its stream under at its durable position:
-- moved only in the materialization transaction of a transaction that
-- activates one, so a restart resumes under the generation in force there.
CREATE TABLE synchro.capture_registry_state (
  stream_generation text PRIMARY KEY,
  registry_generation bigint NOT NULL REFERENCES synchro.registry_generations
);

-- The generation each row event was read under.
ALTER TABLE synchro.wal_events ADD COLUMN registry_generation bigint;

-- A change of membership rule taken at its stream position: row events after
-- the activation are placed by the new function, rows not written since keep
-- the edges they have (synchro_reconfigure_membership re-places those and
-- sends their scopes to rebuild; this entry point does not).
CREATE FUNCTION synchro.registry_set_membership(p_relation text, p_membership_fn text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_oid oid := to_regclass(p_relation);
  v_next record;
  v_key_type oid;
  v_proc regprocedure;
BEGIN
  IF v_oid IS NULL OR array_length(parse_ident(p_relation), 1) <> 2 THEN
    RAISE EXCEPTION 'give the schema-qualified name of a registered relation' USING ERRCODE = '22023';
  END IF;
  SELECT n.table_id, n.generation INTO v_next FROM synchro.registry_next_generation(v_oid) n;
  SELECT a.atttypid INTO v_key_type FROM synchro.relations r JOIN pg_attribute a ON a.attrelid = v_oid AND a.attname = r.pk_column
   WHERE r.table_id = v_next.table_id AND r.kind = 'synced';
  IF v_key_type IS NULL THEN
    RAISE EXCEPTION 'only a synced table has a membership function' USING ERRCODE = '22023';
  END IF;
  v_proc := synchro.membership_function_check(p_membership_fn, v_key_type);
  UPDATE synchro.relations SET membership_function = (SELECT format('%I.%I', n.nspname, p.proname) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.oid = v_proc),
         registry_generation = v_next.generation
   WHERE table_id = v_next.table_id;
  PERFORM synchro.membership_reads_record(v_next.table_id, v_proc);
  RETURN v_next.generation;
END
$$;

-- Stores a pending generation of one registered relation that also syncs
-- p_columns, validated or not, WITHOUT its activation message: the first half
-- of a staged registry change. Nothing reads it until a committed activation
-- message names it; a message naming an unvalidated one poisons capture.
CREATE FUNCTION synchro.registry_stage_generation(p_relation text, p_columns text[], p_validated boolean) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_oid oid := to_regclass(p_relation);
  v_table text;
  v_gen bigint;
  v_snapshot jsonb := synchro.registry_snapshot_now();
  v_column text;
BEGIN
  SELECT table_id INTO v_table FROM synchro.relations WHERE physical_relation_oid = v_oid AND active;
  IF v_table IS NULL THEN
    RAISE EXCEPTION 'relation % is not registered', p_relation USING ERRCODE = '42704';
  END IF;
  LOCK TABLE synchro.registry_generations IN EXCLUSIVE MODE;
  FOREACH v_column IN ARRAY coalesce(p_columns, '{}') LOOP
    v_snapshot := jsonb_set(v_snapshot, '{fields}', (v_snapshot -> 'fields') || jsonb_build_object(
      'table_id', v_table, 'field_id', v_table || 'n' || nextval('synchro.logical_id_seq'), 'column_name', v_column,
      'portable_type', 'string', 'nullable', true, 'writable', false, 'generated', false, 'numeric_precision', NULL, 'numeric_scale', NULL));
  END LOOP;
  SELECT coalesce(max(generation), 0) + 1 INTO v_gen FROM synchro.registry_generations;
  INSERT INTO synchro.registry_generations (generation, state, validated, created_at, snapshot) VALUES (v_gen, 'pending', p_validated, now(), v_snapshot);
  RETURN v_gen;
END
$$;

REVOKE EXECUTE ON FUNCTION synchro.registry_set_membership(text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.registry_stage_generation(text, text[], boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.registry_set_membership(text, text) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.registry_stage_generation(text, text[], boolean) TO synchro_operator;
GRANT SELECT ON synchro.capture_registry_state TO synchro_operator;
