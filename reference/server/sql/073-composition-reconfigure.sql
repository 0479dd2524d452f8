-- A controlled composition change (SYNC-SCOPE-004): a registered table moves
-- between single_scope and multi_scope under a new registry generation.
-- Composition is part of the published schema, so every cursor of a scope
-- holding rows of the table was issued under the old rules: each such scope
-- gets a new membership generation, and no other scope does.

-- Every cursor of the given scopes was issued under rules that just changed:
-- each gets a new membership generation (a missing state row stands for
-- generation 1, so a first bump writes 2, as 024 does). Returns the new
-- generation of each scope. Shared by the registry changes of 073 and 079.
CREATE FUNCTION synchro.bump_membership_generations(p_scopes text[]) RETURNS jsonb
LANGUAGE sql SET search_path = pg_catalog, synchro AS $$
  INSERT INTO synchro.scope_state (scope_id, membership_generation)
    SELECT unnest(p_scopes), 2
  ON CONFLICT (scope_id) DO UPDATE SET membership_generation = synchro.scope_state.membership_generation + 1;
  SELECT coalesce(jsonb_object_agg(scope_id, membership_generation), '{}') FROM synchro.scope_state WHERE scope_id = ANY (p_scopes);
$$;

-- Step 2 (as synchro_owner): record the change and mint the generations, in the caller's transaction.
CREATE FUNCTION synchro.composition_reconfigure_activate(p_oid oid, p_composition text) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_next record;
  v_rel record;
  v_affected text[];
  v_scopes jsonb;
BEGIN
  -- Opening the generation first serializes every registry change behind this one.
  SELECT n.table_id, n.generation INTO v_next FROM synchro.registry_next_generation(p_oid) n;
  SELECT * INTO v_rel FROM synchro.relations WHERE table_id = v_next.table_id;
  IF v_rel.kind <> 'synced' THEN
    RAISE EXCEPTION 'only a synced table has a composition' USING ERRCODE = '22023';
  END IF;
  IF v_rel.composition = p_composition THEN
    RAISE EXCEPTION 'the table''s composition is already %', p_composition USING ERRCODE = '22023';
  END IF;
  -- A single-scope table places each row in at most one scope: refuse the change while a row is in several.
  IF p_composition = 'single_scope' AND EXISTS (
       SELECT 1 FROM synchro.membership_edges WHERE table_id = v_rel.table_id GROUP BY pk_text HAVING count(*) > 1) THEN
    RAISE EXCEPTION 'a row of the table is in more than one scope, so it cannot become single_scope' USING ERRCODE = '22023';
  END IF;
  SELECT coalesce(array_agg(DISTINCT scope_id COLLATE "C" ORDER BY scope_id COLLATE "C"), '{}') INTO v_affected
    FROM synchro.membership_edges WHERE table_id = v_rel.table_id;
  UPDATE synchro.relations SET composition = p_composition, registry_generation = v_next.generation WHERE table_id = v_rel.table_id;
  v_scopes := synchro.bump_membership_generations(v_affected);
  PERFORM pg_notify('synchro_capture', '');
  RETURN jsonb_build_object('table_id', v_rel.table_id, 'registry_generation', v_next.generation, 'composition', p_composition,
    'membership_generations', v_scopes);
END
$$;

-- Operator entry point. Runs with the caller's rights for the lock: writers of
-- the table wait until the change commits, so no captured row straddles it.
CREATE FUNCTION synchro.synchro_reconfigure_composition(p_relation text, p_composition text) RETURNS jsonb
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_oid oid := to_regclass(p_relation);
BEGIN
  IF v_oid IS NULL OR array_length(parse_ident(p_relation), 1) <> 2 THEN
    RAISE EXCEPTION 'give the schema-qualified name of a registered relation' USING ERRCODE = '22023';
  END IF;
  IF p_composition IS NULL OR p_composition NOT IN ('single_scope', 'multi_scope') THEN
    RAISE EXCEPTION 'composition must be single_scope or multi_scope' USING ERRCODE = '22023';
  END IF;
  EXECUTE format('LOCK TABLE %s IN SHARE MODE', v_oid::regclass);
  RETURN synchro.composition_reconfigure_activate(v_oid, p_composition);
END
$$;

REVOKE EXECUTE ON FUNCTION synchro.composition_reconfigure_activate(oid, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.synchro_reconfigure_composition(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.composition_reconfigure_activate(oid, text) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_reconfigure_composition(text, text) TO synchro_operator;
