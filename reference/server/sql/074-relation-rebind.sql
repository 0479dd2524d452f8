-- A controlled rebinding (SYNC-SCOPE-004): after an operator renamed a
-- registered relation (ALTER TABLE ... RENAME, same object), its registration
-- is bound to the new name under a new registry generation. Until then the
-- registration names a relation that no longer exists and capture is blocked
-- as drift. The published schema names the relation, so every scope holding
-- rows of the table gets a new membership generation, and no other scope does.

-- Step 2 (as synchro_owner): record the new name and mint the generations, in the caller's transaction.
CREATE FUNCTION synchro.relation_rebind_activate(p_schema text, p_relation text, p_oid oid) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_rel record;
  v_next record;
  v_affected text[];
  v_scopes jsonb;
BEGIN
  -- The registration must be the one for the renamed object: same object, still under its old name.
  SELECT * INTO v_rel FROM synchro.relations r WHERE r.active AND r.physical_schema = p_schema AND r.physical_relation = p_relation;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no active registration names %.%', p_schema, p_relation USING ERRCODE = '42704';
  END IF;
  IF v_rel.physical_relation_oid <> p_oid THEN
    RAISE EXCEPTION 'the renamed relation is not the registered one: a registration is rebound only to the relation it registered' USING ERRCODE = '22023';
  END IF;
  IF to_regclass(format('%I.%I', p_schema, p_relation)) IS NOT NULL THEN
    RAISE EXCEPTION 'the registered relation still exists under its registered name' USING ERRCODE = '22023';
  END IF;
  SELECT n.table_id, n.generation INTO v_next FROM synchro.registry_next_generation(p_oid) n;
  SELECT coalesce(array_agg(DISTINCT scope_id COLLATE "C" ORDER BY scope_id COLLATE "C"), '{}') INTO v_affected
    FROM synchro.membership_edges WHERE table_id = v_rel.table_id;
  UPDATE synchro.relations r SET physical_schema = n.nspname, physical_relation = c.relname, registry_generation = v_next.generation
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE c.oid = p_oid AND r.table_id = v_rel.table_id;
  -- Capture writes the projection under the relation's name; membership functions read it by identity, so a rename keeps them bound.
  IF to_regclass(format('synchro_projection.%I', p_relation)) IS NOT NULL THEN
    EXECUTE format('ALTER TABLE synchro_projection.%I RENAME TO %I', p_relation, (SELECT relname FROM pg_class WHERE oid = p_oid));
  END IF;
  v_scopes := synchro.bump_membership_generations(v_affected);
  PERFORM pg_notify('synchro_capture', '');
  RETURN jsonb_build_object('table_id', v_rel.table_id, 'registry_generation', v_next.generation,
    'relation', (SELECT physical_schema || '.' || physical_relation FROM synchro.relations WHERE table_id = v_rel.table_id),
    'membership_generations', v_scopes);
END
$$;

-- Operator entry point: the registered name and the new one, both schema-qualified.
-- Runs with the caller's rights for the lock, so writers of the table wait until it commits.
CREATE FUNCTION synchro.synchro_rebind_relation(p_relation text, p_renamed text) RETURNS jsonb
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_old text[] := CASE WHEN p_relation IS NULL THEN NULL ELSE parse_ident(p_relation) END;
  v_oid oid := to_regclass(p_renamed);
BEGIN
  IF array_length(v_old, 1) IS DISTINCT FROM 2 OR v_oid IS NULL OR array_length(parse_ident(p_renamed), 1) <> 2 THEN
    RAISE EXCEPTION 'give the schema-qualified registered name and the schema-qualified name of the renamed relation' USING ERRCODE = '22023';
  END IF;
  EXECUTE format('LOCK TABLE %s IN SHARE MODE', v_oid::regclass);
  RETURN synchro.relation_rebind_activate(v_old[1], v_old[2], v_oid);
END
$$;

REVOKE EXECUTE ON FUNCTION synchro.relation_rebind_activate(text, text, oid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.synchro_rebind_relation(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.relation_rebind_activate(text, text, oid) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_rebind_relation(text, text) TO synchro_operator;
