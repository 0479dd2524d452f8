-- Dependency-driven membership.
--
-- A membership function may read more than its own row: the parent's
-- projection (a capture-only dependency) or sibling rows of its own table.
-- Each such read is declared as a dependency of the target table together
-- with an impact function. The capture worker calls the impact function
-- with the old and the new image of every changed dependency row and
-- re-evaluates the target rows it names against the final projected state
-- of the same source transaction (reference/server/capture/impact.ts).
--
-- A capture dependency is registered like a synced table (same key and
-- replica identity rules, fences, guards, publication and projection) but
-- has no client surface: its internal table_id starts with 'd', manifests,
-- synchro_tables(), pull, rebuild, push and seed only ever read kind
-- 'synced'.

-- What an impact function returns: one target row to re-evaluate.
CREATE TYPE synchro.synchro_row_ref AS (table_id text, pk_type text, pk_value text);
-- Application owners declare impact functions returning this type; they do so
-- as operators (only those reach schema synchro), never as PUBLIC (052).
GRANT USAGE ON TYPE synchro.synchro_row_ref TO synchro_operator;

CREATE TABLE synchro.membership_dependencies (
  dependency_id text PRIMARY KEY,
  -- The table whose rows are re-evaluated (the spec's source_table_id).
  source_table_id text NOT NULL REFERENCES synchro.relations (table_id),
  dependency_relation_id text NOT NULL REFERENCES synchro.relations (relation_id),
  -- Internal table_id of the dependency, the key the capture worker reads events under.
  dependency_table_id text NOT NULL REFERENCES synchro.relations (table_id),
  dependency_registration_kind text NOT NULL CHECK (dependency_registration_kind IN ('synced', 'capture_dependency')),
  -- The whole captured image reaches the impact function, so every field is a dependency field.
  dependency_field_ids text[] NOT NULL,
  membership_function_id text NOT NULL,
  impact_function_id text NOT NULL,
  impact_function_oid oid NOT NULL,
  max_impact_rows integer NOT NULL CHECK (max_impact_rows > 0),
  registry_generation bigint NOT NULL REFERENCES synchro.registry_generations,
  UNIQUE (source_table_id, dependency_relation_id)
);

-- Registers a capture-only dependency; returns its relation_id.
CREATE FUNCTION synchro.synchro_register_capture_dependency(p_relation text, p_key_column text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_table text;
BEGIN
  -- Push disabled: a capture key may be database-generated, no client ever authors one.
  v_table := synchro.registration_register('capture_dependency', p_relation, NULL, 'single_scope', p_key_column,
    NULL, NULL, 'disabled', NULL, NULL, 1000);
  RETURN (SELECT relation_id FROM synchro.relations WHERE table_id = v_table);
END
$$;

-- Resolves a schema-qualified name to its active registration, or fails with invalid_registration.
CREATE FUNCTION synchro.dependency_relation(p_relation text, p_reason text) RETURNS synchro.relations
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_oid oid;
  v_rel synchro.relations;
BEGIN
  IF p_relation IS NULL OR array_length(parse_ident(p_relation), 1) <> 2 THEN
    PERFORM synchro.registration_error(p_reason);
  END IF;
  v_oid := to_regclass(p_relation);
  SELECT * INTO v_rel FROM synchro.relations WHERE physical_relation_oid = v_oid AND active;
  IF v_oid IS NULL OR NOT FOUND THEN
    PERFORM synchro.registration_error(p_reason);
  END IF;
  RETURN v_rel;
END
$$;

CREATE FUNCTION synchro.dependency_activate(p_target text, p_dependency text, p_impact_fn text, p_max_impact_rows integer) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_target synchro.relations;
  v_dep synchro.relations;
  v_proc regprocedure;
  v_fn text;
  v_next record;
  v_id text;
BEGIN
  IF p_max_impact_rows IS NULL OR p_max_impact_rows <= 0 THEN
    PERFORM synchro.registration_error('invalid_limit');
  END IF;
  v_target := synchro.dependency_relation(p_target, 'unknown_relation');
  -- A read of a relation with no registration of its own cannot be declared.
  v_dep := synchro.dependency_relation(p_dependency, 'undeclared_dependency');
  IF v_target.kind <> 'synced' OR v_target.membership_function IS NULL THEN
    PERFORM synchro.registration_error('invalid_dependency_target');
  END IF;
  -- Every dependency has its impact function.
  IF p_impact_fn IS NULL THEN
    PERFORM synchro.registration_error('undeclared_dependency');
  END IF;
  -- Schema-qualified, exact signature (old image, new image), a set of row references, and
  -- the scope function contract: replaying a transaction has to name the same rows.
  IF array_length(parse_ident(p_impact_fn), 1) <> 2 THEN
    PERFORM synchro.registration_error('invalid_scope_function');
  END IF;
  v_proc := synchro.function_by_name(p_impact_fn, ARRAY['jsonb'::regtype, 'jsonb'::regtype]::oid[]);
  IF v_proc IS NULL OR NOT EXISTS (SELECT 1 FROM pg_proc WHERE oid = v_proc AND proretset
       AND prorettype = 'synchro.synchro_row_ref'::regtype AND pronargdefaults = 0 AND provariadic = 0) THEN
    PERFORM synchro.registration_error('invalid_scope_function');
  END IF;
  PERFORM synchro.scope_function_contract(v_proc);
  -- It may look up rows of the two relations it relates, through their projections only.
  IF EXISTS (SELECT 1 FROM unnest(synchro.scope_function_reads(v_proc)) r
              WHERE r NOT IN (v_target.physical_relation_oid, v_dep.physical_relation_oid)) THEN
    PERFORM synchro.registration_error('undeclared_dependency');
  END IF;
  IF EXISTS (SELECT 1 FROM synchro.membership_dependencies WHERE source_table_id = v_target.table_id AND dependency_relation_id = v_dep.relation_id) THEN
    PERFORM synchro.registration_error('duplicate_dependency');
  END IF;
  SELECT format('%I.%I', n.nspname, p.proname) INTO v_fn FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.oid = v_proc;

  -- A dependency changes how the target's membership is kept: a new registry generation.
  SELECT n.table_id, n.generation INTO v_next FROM synchro.registry_next_generation(v_target.physical_relation_oid) n;
  UPDATE synchro.relations SET registry_generation = v_next.generation WHERE table_id = v_target.table_id;
  v_id := 'm' || nextval('synchro.logical_id_seq');
  INSERT INTO synchro.membership_dependencies VALUES (v_id, v_target.table_id, v_dep.relation_id, v_dep.table_id, v_dep.kind,
    ARRAY(SELECT field_id FROM synchro.fields WHERE table_id = v_dep.table_id ORDER BY field_id COLLATE "C"),
    v_target.membership_function, v_fn, v_proc, p_max_impact_rows, v_next.generation);
  RETURN v_id;
END
$$;

-- Declares that the membership of p_target_relation reads p_dependency_relation
-- (the same relation: a self-impact declaration for sibling reads). Returns the dependency_id.
CREATE FUNCTION synchro.synchro_register_membership_dependency(p_target_relation text, p_dependency_relation text, p_impact_fn text,
  p_max_impact_rows integer DEFAULT 1000) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
BEGIN
  RETURN synchro.dependency_activate(p_target_relation, p_dependency_relation, p_impact_fn, p_max_impact_rows);
END
$$;

REVOKE ALL ON synchro.membership_dependencies FROM PUBLIC;
GRANT SELECT ON synchro.membership_dependencies TO synchro_operator, synchro_worker;
REVOKE EXECUTE ON FUNCTION synchro.registration_register(text, text, text, text, text, text, text, text, text[], text[], integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.synchro_register_capture_dependency(text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.dependency_relation(text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.dependency_activate(text, text, text, integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.synchro_register_membership_dependency(text, text, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.registration_register(text, text, text, text, text, text, text, text, text[], text[], integer) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_register_capture_dependency(text, text) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.dependency_relation(text, text) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.dependency_activate(text, text, text, integer) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_register_membership_dependency(text, text, text, integer) TO synchro_operator;
