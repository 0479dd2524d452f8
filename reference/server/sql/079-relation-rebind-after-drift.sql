-- A controlled rebinding (SYNC-SCOPE-004; after drift, SYNC-CAP-009; decisions
-- 290 and 330): an operator renamed a registered relation or moved it into
-- another schema (same object), and its registration is bound to where it is
-- now under a new registry generation. Until then the registration names a
-- relation that no longer exists and capture is blocked as drift, and the row
-- events written since stand in the stream before the rebinding. The
-- rebinding, in the rename's transaction or any time after it:
--   * accepts only the registered object (its OID) with the physical identity
--     the registration needs (a table, replica identity DEFAULT, the key column
--     as the sole column of an immediate primary key, every registered column),
--     in any schema and under any name;
--   * records itself (relation_rebindings), so the worker knows that events of
--     that object read under an earlier generation under another name are
--     covered by this rebinding instead of quarantining them;
--   * re-baselines the table after its activation message: every row as it
--     stands, and a rowless tombstone for every captured row deleted since, so
--     the covered events lose nothing;
--   * keeps the projection named after the relation and the relation in the
--     capture publication.
-- The published schema names the relation, so scopes holding rows of the
-- table get a new membership generation here, and no other scope does; the
-- worker gives one to every scope whose contents the re-baseline changes
-- (capture/relation-rebinding.ts), so those scopes rebuild.
-- (The first form of the two functions, for a rename in the same transaction
-- only, was folded into this file before 0.3.2 was published: decision 420.)

CREATE TABLE synchro.relation_rebindings (
  registry_generation bigint PRIMARY KEY REFERENCES synchro.registry_generations,
  table_id text NOT NULL,
  relation_oid oid NOT NULL,
  from_schema text NOT NULL,
  from_relation text NOT NULL,
  to_schema text NOT NULL,
  to_relation text NOT NULL,
  rebound_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
REVOKE ALL ON synchro.relation_rebindings FROM PUBLIC;
GRANT SELECT ON synchro.relation_rebindings TO synchro_operator, synchro_worker;

-- Why the relation behind p_oid cannot carry the registration of p_table, or NULL when it can.
CREATE FUNCTION synchro.relation_rebind_refusal(p_table text, p_oid oid) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, synchro AS $$
  SELECT CASE
    WHEN c.relkind NOT IN ('r', 'p') THEN 'the relation is not a table'
    WHEN c.relreplident <> 'd' THEN 'the relation''s replica identity is not DEFAULT'
    WHEN NOT EXISTS (SELECT 1 FROM pg_constraint k JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = r.pk_column AND NOT a.attisdropped
                      WHERE k.conrelid = c.oid AND k.contype = 'p' AND NOT k.condeferrable AND k.conkey = ARRAY[a.attnum])
      THEN 'the registered key column is not the sole column of an immediate primary key'
    WHEN EXISTS (SELECT 1 FROM synchro.fields f WHERE f.table_id = r.table_id
                   AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = f.column_name AND a.attnum > 0 AND NOT a.attisdropped))
      THEN 'a registered column is missing from the relation'
  END
  FROM synchro.relations r JOIN pg_class c ON c.oid = p_oid
  WHERE r.table_id = p_table
$$;

-- Step 2 (as synchro_owner): record the new binding, mint the generations and re-baseline, in the caller's transaction.
CREATE FUNCTION synchro.relation_rebind_activate(p_schema text, p_relation text, p_oid oid) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_rel record;
  v_target record;
  v_refusal text;
  v_next record;
  v_affected text[];
  v_scopes jsonb;
BEGIN
  -- The registration must be the one of this object, still under its registered name.
  SELECT * INTO v_rel FROM synchro.relations r WHERE r.active AND r.physical_schema = p_schema AND r.physical_relation = p_relation;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no active registration names %.%', p_schema, p_relation USING ERRCODE = '42704';
  END IF;
  -- By OID: a table created under the name (or any other relation) is never taken for the registered one.
  IF v_rel.physical_relation_oid <> p_oid THEN
    RAISE EXCEPTION 'the renamed relation is not the registered one: a registration is rebound only to the relation it registered' USING ERRCODE = '22023';
  END IF;
  IF to_regclass(format('%I.%I', p_schema, p_relation)) IS NOT NULL THEN
    RAISE EXCEPTION 'the registered relation still exists under its registered name' USING ERRCODE = '22023';
  END IF;
  v_refusal := synchro.relation_rebind_refusal(v_rel.table_id, p_oid);
  IF v_refusal IS NOT NULL THEN
    RAISE EXCEPTION 'the relation cannot carry its registration: %', v_refusal USING ERRCODE = '22023';
  END IF;
  SELECT n.nspname, c.relname INTO v_target FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = p_oid;
  -- Capture writes the projection under the relation's name (one namespace for every schema).
  IF v_target.relname <> p_relation AND EXISTS (SELECT 1 FROM synchro.projection_views WHERE view_name = v_target.relname AND relation_oid <> p_oid) THEN
    RAISE EXCEPTION 'the projection name synchro_projection.% belongs to another relation', v_target.relname USING ERRCODE = '55000';
  END IF;

  -- The activation message comes first: everything this rebinding emits is read under it.
  SELECT n.table_id, n.generation INTO v_next FROM synchro.registry_next_generation(p_oid) n;
  SELECT coalesce(array_agg(DISTINCT scope_id COLLATE "C" ORDER BY scope_id COLLATE "C"), '{}') INTO v_affected
    FROM synchro.membership_edges WHERE table_id = v_rel.table_id;
  UPDATE synchro.relations SET physical_schema = v_target.nspname, physical_relation = v_target.relname, registry_generation = v_next.generation
   WHERE table_id = v_rel.table_id;
  INSERT INTO synchro.relation_rebindings (registry_generation, table_id, relation_oid, from_schema, from_relation, to_schema, to_relation)
    VALUES (v_next.generation, v_rel.table_id, p_oid, p_schema, p_relation, v_target.nspname, v_target.relname);
  -- Membership functions read the projection by identity, so a rename keeps them bound.
  IF v_target.relname <> p_relation AND to_regclass(format('synchro_projection.%I', p_relation)) IS NOT NULL THEN
    EXECUTE format('ALTER TABLE synchro_projection.%I RENAME TO %I', p_relation, v_target.relname);
    UPDATE synchro.projection_views SET view_name = v_target.relname WHERE view_name = p_relation AND relation_oid = p_oid;
  END IF;
  -- Publication membership follows the object; a worker that started during the drift may have dropped it.
  IF NOT EXISTS (SELECT 1 FROM pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid WHERE p.pubname = 'synchro_capture' AND pr.prrelid = p_oid) THEN
    BEGIN
      EXECUTE format('ALTER PUBLICATION synchro_capture ADD TABLE %s', p_oid::regclass);
    EXCEPTION WHEN undefined_object OR insufficient_privilege OR duplicate_object THEN
      NULL;
    END;
  END IF;

  -- Re-baseline: first a rowless tombstone for every captured live row deleted since, then every row
  -- as it stands (a soft-deleted row's own baseline comes after its tombstone, so it wins).
  PERFORM pg_logical_emit_message(true, 'synchro_baseline',
            jsonb_build_object('t', p.table_id, 'k', p.pk_text, 'v', rv.server_version, 's', 'deleted')::text)
     FROM synchro.projections p JOIN synchro.row_versions rv ON rv.table_id = p.table_id AND rv.pk_text = p.pk_text
    WHERE p.table_id = v_rel.table_id AND NOT p.deleted AND rv.state = 'deleted'
    ORDER BY p.pk_text COLLATE "C";
  PERFORM synchro.capture_baseline(v_rel.table_id);

  v_scopes := synchro.bump_membership_generations(v_affected);
  PERFORM pg_notify('synchro_capture', '');
  RETURN jsonb_build_object('table_id', v_rel.table_id, 'registry_generation', v_next.generation,
    'relation', v_target.nspname || '.' || v_target.relname,
    'membership_generations', v_scopes);
END
$$;

REVOKE EXECUTE ON FUNCTION synchro.relation_rebind_refusal(text, oid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.relation_rebind_refusal(text, oid) TO synchro_operator;

-- Operator entry point: the registered name and the new one, both
-- schema-qualified, for a relation renamed in place or moved to another
-- schema. Runs with the caller's rights for the lock (writers of the table
-- wait until it commits) and for the grant: the fence trigger runs as
-- synchro_owner, which registration gave the registered schema; a new schema
-- is given to it the same way.
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
  IF (SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = v_oid) <> quote_ident(v_old[1]) THEN
    -- The capture worker resolves the row type of the relation it decodes (materialize.ts, impact.ts): it needs the schema too (076).
    EXECUTE format('GRANT USAGE ON SCHEMA %s TO synchro_owner, synchro_worker', (SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = v_oid));
  END IF;
  RETURN synchro.relation_rebind_activate(v_old[1], v_old[2], v_oid);
END
$$;

REVOKE EXECUTE ON FUNCTION synchro.relation_rebind_activate(text, text, oid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.synchro_rebind_relation(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.relation_rebind_activate(text, text, oid) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_rebind_relation(text, text) TO synchro_operator;
