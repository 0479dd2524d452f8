-- Operator controls of scope assignment: per-user grants, the default user
-- scope, shared scopes, and the one registered assignment function.
-- Changes take effect at the next successful connect (or pull).

CREATE FUNCTION synchro.synchro_grant_user_scope(p_user_id text, p_scope_id text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
BEGIN
  IF p_user_id IS NULL OR p_scope_id IS NULL OR btrim(p_scope_id) = '' THEN
    RAISE EXCEPTION 'user and scope are required' USING ERRCODE = '22023';
  END IF;
  IF p_scope_id = 'user:' || p_user_id THEN
    -- Granting the default scope back is the inverse of revoking it.
    DELETE FROM synchro.default_scope_revocations WHERE user_id = p_user_id;
    RETURN;
  END IF;
  INSERT INTO synchro.user_scope_grants (user_id, scope_id) VALUES (p_user_id, p_scope_id) ON CONFLICT DO NOTHING;
END
$$;

CREATE FUNCTION synchro.synchro_revoke_user_scope(p_user_id text, p_scope_id text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
BEGIN
  IF p_user_id IS NULL OR p_scope_id IS NULL THEN
    RAISE EXCEPTION 'user and scope are required' USING ERRCODE = '22023';
  END IF;
  IF p_scope_id = 'user:' || p_user_id THEN
    INSERT INTO synchro.default_scope_revocations (user_id) VALUES (p_user_id) ON CONFLICT DO NOTHING;
    RETURN;
  END IF;
  DELETE FROM synchro.user_scope_grants WHERE user_id = p_user_id AND scope_id = p_scope_id;
END
$$;

CREATE FUNCTION synchro.synchro_register_shared_scope(p_scope_id text, p_portable boolean DEFAULT false) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
BEGIN
  IF p_scope_id IS NULL OR btrim(p_scope_id) = '' OR p_scope_id LIKE 'user:%' THEN
    RAISE EXCEPTION 'a shared scope ID is nonempty and does not start with user:' USING ERRCODE = '22023';
  END IF;
  INSERT INTO synchro.shared_scopes (scope_id, portable) VALUES (p_scope_id, coalesce(p_portable, false))
    ON CONFLICT (scope_id) DO UPDATE SET portable = excluded.portable;
END
$$;

CREATE FUNCTION synchro.synchro_unregister_shared_scope(p_scope_id text) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
  DELETE FROM synchro.shared_scopes WHERE scope_id = p_scope_id;
$$;

-- SHA-256 of the function definition, read under a fixed search_path so the text is stable.
CREATE FUNCTION synchro.function_definition_sha256(p_fn oid) RETURNS bytea
LANGUAGE sql STABLE SET search_path = pg_catalog, synchro, pg_temp AS $$
  SELECT sha256(convert_to(pg_get_functiondef(p_fn), 'UTF8'));
$$;

CREATE FUNCTION synchro.assignment_rejected(p_rule text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
BEGIN
  RAISE EXCEPTION 'assignment function rejected: %', p_rule USING ERRCODE = '22023';
END
$$;

-- The checks and the write; reached only through the entry point below.
CREATE FUNCTION synchro.assignment_function_register(p_function text, p_max_scopes integer) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro, pg_temp AS $$
DECLARE
  v_parts text[];
  v_fn oid;
  v_p pg_proc%ROWTYPE;
  v_before bytea;
  v_actor oid := (SELECT oid FROM pg_roles WHERE rolname = session_user);
  v_dep record;
BEGIN
  IF p_function IS NULL THEN
    RETURN;
  END IF;
  IF p_max_scopes IS NOT NULL AND (p_max_scopes < 1 OR p_max_scopes > 1000) THEN
    RAISE EXCEPTION 'invalid_limit: the assignment bound is 1..1000 or NULL' USING ERRCODE = '22023';
  END IF;
  v_parts := parse_ident(p_function);
  IF array_length(v_parts, 1) <> 2 THEN
    PERFORM synchro.assignment_rejected('the name must be schema-qualified');
  END IF;
  v_fn := to_regprocedure(p_function || '(text)');
  IF v_fn IS NULL THEN
    PERFORM synchro.assignment_rejected('no function with one text argument has that name');
  END IF;
  v_before := synchro.function_definition_sha256(v_fn);
  SELECT * INTO v_p FROM pg_proc WHERE oid = v_fn;
  IF v_p.prolang <> (SELECT oid FROM pg_language WHERE lanname = 'sql') OR v_p.prosqlbody IS NULL THEN
    PERFORM synchro.assignment_rejected('rule 1: plain SQL with a SQL-standard body');
  END IF;
  IF v_p.pronargs <> 1 OR v_p.pronargdefaults <> 0 OR v_p.provariadic <> 0 THEN
    PERFORM synchro.assignment_rejected('rule 2: exactly one text argument, no default, not variadic');
  END IF;
  IF NOT v_p.proretset OR v_p.prorettype <> 'text'::regtype THEN
    PERFORM synchro.assignment_rejected('rule 3: RETURNS SETOF text');
  END IF;
  IF v_p.provolatile <> 's' OR v_p.prosecdef THEN
    PERFORM synchro.assignment_rejected('rule 4: STABLE and not SECURITY DEFINER');
  END IF;
  IF v_p.proconfig IS DISTINCT FROM ARRAY['search_path=pg_catalog, synchro'] THEN
    PERFORM synchro.assignment_rejected('rule 5: search_path must be exactly pg_catalog, synchro');
  END IF;
  IF v_p.proowner <> v_actor THEN
    PERFORM synchro.assignment_rejected('rule 6: owned by the registering role');
  END IF;
  IF NOT has_function_privilege('synchro_owner', v_fn, 'EXECUTE') THEN
    PERFORM synchro.assignment_rejected('rule 7: synchro_owner needs EXECUTE');
  END IF;
  IF v_p.proacl IS NULL OR EXISTS (SELECT 1 FROM aclexplode(v_p.proacl) a WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE') THEN
    PERFORM synchro.assignment_rejected('rule 7: PUBLIC must not have EXECUTE');
  END IF;
  FOR v_dep IN SELECT d.classid, d.refclassid, d.refobjid FROM pg_depend d
                WHERE d.classid = 'pg_proc'::regclass AND d.objid = v_fn AND d.deptype = 'n' LOOP
    IF v_dep.refclassid = 'pg_proc'::regclass
       AND (SELECT pronamespace FROM pg_proc WHERE oid = v_dep.refobjid) <> 'pg_catalog'::regnamespace THEN
      PERFORM synchro.assignment_rejected('rule 8: calls only pg_catalog functions');
    END IF;
    IF v_dep.refclassid = 'pg_class'::regclass THEN
      IF (SELECT relnamespace FROM pg_class WHERE oid = v_dep.refobjid) = 'synchro'::regnamespace THEN
        PERFORM synchro.assignment_rejected('rule 9: reads nothing in schema synchro');
      END IF;
      IF NOT has_table_privilege(v_p.proowner, v_dep.refobjid, 'SELECT')
         OR NOT has_schema_privilege(v_p.proowner, (SELECT relnamespace FROM pg_class WHERE oid = v_dep.refobjid), 'USAGE') THEN
        PERFORM synchro.assignment_rejected('rule 10: the owner must be able to read every relation it uses');
      END IF;
    END IF;
  END LOOP;
  IF synchro.function_definition_sha256(v_fn) IS DISTINCT FROM v_before THEN
    PERFORM synchro.assignment_rejected('the definition changed during registration');
  END IF;
  INSERT INTO synchro.assignment_function (singleton, fn_oid, fn_schema, fn_name, max_scopes, def_sha256, registered_by)
  VALUES (true, v_fn, v_parts[1], v_parts[2], p_max_scopes, v_before, session_user)
  ON CONFLICT (singleton) DO UPDATE SET fn_oid = excluded.fn_oid, fn_schema = excluded.fn_schema, fn_name = excluded.fn_name,
    max_scopes = excluded.max_scopes, def_sha256 = excluded.def_sha256, registered_by = excluded.registered_by,
    registered_at = now();
END
$$;

-- Called on NULL input on purpose: a NULL name changes nothing and returns SQL
-- NULL (a PL/pgSQL void function cannot), and a NULL bound means "no count limit".
CREATE FUNCTION synchro.synchro_register_assignment_function(p_function text, p_max_scopes integer DEFAULT 1000) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, synchro, pg_temp AS $$
  SELECT CASE WHEN p_function IS NULL THEN NULL::void ELSE synchro.assignment_function_register(p_function, p_max_scopes) END;
$$;

CREATE FUNCTION synchro.synchro_unregister_assignment_function() RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
  DELETE FROM synchro.assignment_function;
$$;

-- Irreversible retirement: the marker comes first and is permanent; the
-- client's ledgers may be deleted after it (fences are never touched).
CREATE FUNCTION synchro.synchro_retire_client(p_user_id text, p_client_id text) RETURNS uuid
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_id uuid;
BEGIN
  INSERT INTO synchro.client_retirements (user_id, client_id) VALUES (p_user_id, p_client_id)
    ON CONFLICT (user_id, client_id) DO NOTHING RETURNING retirement_id INTO v_id;
  IF v_id IS NULL THEN
    SELECT retirement_id INTO v_id FROM synchro.client_retirements WHERE user_id = p_user_id AND client_id = p_client_id;
  END IF;
  DELETE FROM synchro.push_mutations WHERE user_id = p_user_id AND client_id = p_client_id;
  DELETE FROM synchro.push_batches WHERE user_id = p_user_id AND client_id = p_client_id;
  RETURN v_id;
END
$$;
