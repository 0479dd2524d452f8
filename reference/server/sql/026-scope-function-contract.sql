-- The scope function contract (ADR 004, Function restrictions).
--
-- Membership and impact functions are application SQL that the capture
-- worker runs inside materialization. Replaying a transaction must place
-- its rows exactly as before, so registration only takes functions whose
-- reads PostgreSQL itself can show:
--   * LANGUAGE sql with a SQL-standard body (BEGIN ATOMIC / RETURN): the
--     body is parsed at creation, its relations are recorded in pg_depend
--     and its parse tree in pg_proc.prosqlbody;
--   * STABLE and SECURITY INVOKER;
--   * no volatile value, caller identity, setting, sequence state, random
--     value, wall clock or dynamic SQL anywhere in the body;
--   * reads only projections (synchro_projection.*), of its own relation or
--     of a relation it declared as a dependency; never a live relation;
--   * its owner can read each projection it names, since the worker runs
--     it as that owner (capture/owner-role.ts).
--
-- Projections are prepared before the function is written, because a
-- SQL-standard body must name relations that exist.

-- One projection per source relation, named by the relation. Its identity
-- (source relation and column list) never changes once prepared, so a
-- function body bound to it keeps reading the same thing.
CREATE TABLE synchro.projection_views (
  view_name text PRIMARY KEY,
  relation_oid oid NOT NULL UNIQUE,
  projection_oid oid NOT NULL UNIQUE,
  column_list text NOT NULL
);
REVOKE ALL ON synchro.projection_views FROM PUBLIC;
GRANT SELECT ON synchro.projection_views TO synchro_operator, synchro_worker;

-- Creates the projection of a relation, or checks that the existing one is the same.
CREATE FUNCTION synchro.projection_ensure(p_oid oid) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_name text;
  v_owner text;
  v_cols text;
  v_known synchro.projection_views;
BEGIN
  SELECT c.relname, pg_get_userbyid(c.relowner) INTO v_name, v_owner FROM pg_class c WHERE c.oid = p_oid;
  -- Every column, whatever the registration later syncs: membership may read an unsynced one.
  SELECT string_agg(format('%I %s', a.attname, format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY a.attnum) INTO v_cols
    FROM pg_attribute a WHERE a.attrelid = p_oid AND a.attnum > 0 AND NOT a.attisdropped;
  SELECT * INTO v_known FROM synchro.projection_views WHERE view_name = v_name;
  IF FOUND THEN
    IF v_known.relation_oid <> p_oid OR v_known.column_list <> v_cols THEN
      RAISE EXCEPTION 'projection view identity is immutable' USING ERRCODE = '55000',
        DETAIL = format('synchro_projection.%I was prepared for another relation or other columns', v_name);
    END IF;
    RETURN format('synchro_projection.%I', v_name);
  END IF;
  EXECUTE format('CREATE TABLE synchro_projection.%I (%s)', v_name, v_cols);
  -- The worker writes it; the relation's owner (who writes the membership functions) reads it.
  EXECUTE format('GRANT SELECT ON synchro_projection.%I TO synchro_operator, synchro_worker, %I', v_name, v_owner);
  INSERT INTO synchro.projection_views VALUES (v_name, p_oid, format('synchro_projection.%I', v_name)::regclass, v_cols);
  RETURN format('synchro_projection.%I', v_name);
END
$$;

-- Registration keeps a prepared projection, so functions bound to it stay valid.
CREATE OR REPLACE FUNCTION synchro.projection_create(p_table text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
BEGIN
  PERFORM synchro.projection_ensure((SELECT physical_relation_oid FROM synchro.relations WHERE table_id = p_table));
END
$$;

-- Operator entry point: prepare the projection a membership function will
-- read, before writing the function. Repeating it with the same relation and
-- columns is a no-op. Returns the projection's qualified name.
CREATE FUNCTION synchro.synchro_prepare_projection_view(relation text) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_oid oid;
BEGIN
  IF relation IS NULL OR array_length(parse_ident(relation), 1) <> 2 THEN
    RAISE EXCEPTION 'give the schema-qualified name of a table' USING ERRCODE = '22023';
  END IF;
  SELECT c.oid INTO v_oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = (parse_ident(relation))[1] AND c.relname = (parse_ident(relation))[2] AND c.relkind IN ('r', 'p');
  IF v_oid IS NULL THEN
    RAISE EXCEPTION 'relation % does not exist', relation USING ERRCODE = '42P01';
  END IF;
  IF (SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = v_oid) IN ('synchro', 'synchro_projection') THEN
    RAISE EXCEPTION 'synchro metadata has no projection' USING ERRCODE = '22023';
  END IF;
  RETURN synchro.projection_ensure(v_oid);
END
$$;

-- Built-in functions that are not volatile but still read something outside
-- the row state: the clock, settings, the caller or the session.
CREATE FUNCTION synchro.scope_function_forbidden_builtin(p_fn oid) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, synchro AS $$
  SELECT p.provolatile = 'v'
      OR p.proname IN ('now', 'statement_timestamp', 'transaction_timestamp', 'current_setting', 'current_user', 'session_user',
                       'current_database', 'current_schema', 'current_schemas', 'pg_backend_pid', 'inet_client_addr',
                       'inet_client_port', 'inet_server_addr', 'inet_server_port', 'pg_my_temp_schema', 'pg_is_other_temp_schema',
                       'pg_postmaster_start_time', 'pg_conf_load_time', 'txid_current_if_assigned', 'pg_current_xact_id_if_assigned',
                       'pg_has_role', 'pg_get_userbyid')
      OR p.proname LIKE 'has\_%\_privilege'
      OR p.proname LIKE 'to\_reg%'
      OR p.proname LIKE '%\_to\_xml%'
      OR (p.proname = 'age' AND p.pronargs = 1)
    FROM pg_proc p WHERE p.oid = p_fn
$$;

-- Function OIDs a parsed body calls, read from its stored parse tree:
-- function calls, aggregates, window functions and the functions behind operators.
CREATE FUNCTION synchro.scope_function_calls(p_proc regprocedure) RETURNS SETOF oid
LANGUAGE sql STABLE SET search_path = pg_catalog, synchro AS $$
  WITH body AS (SELECT prosqlbody::text AS t FROM pg_proc WHERE oid = p_proc)
  SELECT m[1]::oid FROM body, regexp_matches(body.t, ':(?:funcid|aggfnoid|winfnoid) (\d+)', 'g') AS m
  UNION
  SELECT o.oprcode::oid FROM body, regexp_matches(body.t, ':opno (\d+)', 'g') AS m JOIN pg_operator o ON o.oid = m[1]::oid
$$;

-- Raises invalid_scope_function unless the function is a STABLE, SECURITY
-- INVOKER, SQL-standard body whose every call is deterministic.
CREATE FUNCTION synchro.scope_function_contract(p_proc regprocedure) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_fn pg_proc;
BEGIN
  SELECT * INTO v_fn FROM pg_proc WHERE oid = p_proc;
  IF v_fn.prolang <> (SELECT oid FROM pg_language WHERE lanname = 'sql') OR v_fn.prosqlbody IS NULL
     OR v_fn.provolatile <> 's' OR v_fn.prosecdef THEN
    PERFORM synchro.registration_error('invalid_scope_function');
  END IF;
  -- Caller identity and clock keywords (current_user, current_date, ...) parse to SQLValueFunction;
  -- sequences reached without a function call to NextValueExpr.
  IF v_fn.prosqlbody::text ~ '\{(SQLVALUEFUNCTION|NEXTVALUEEXPR|CURRENTOFEXPR) ' THEN
    PERFORM synchro.registration_error('invalid_scope_function');
  END IF;
  -- Only built-ins: a call into another application function would hide its reads.
  IF EXISTS (SELECT 1 FROM synchro.scope_function_calls(p_proc) c JOIN pg_proc p ON p.oid = c
              WHERE p.pronamespace <> 'pg_catalog'::regnamespace OR synchro.scope_function_forbidden_builtin(p.oid)) THEN
    PERFORM synchro.registration_error('invalid_scope_function');
  END IF;
END
$$;

-- The source relations whose projections the function reads. Anything else
-- it reads (a live relation, synchro metadata, a temporary table) is an
-- undeclared dependency. Its owner must be able to read every projection.
CREATE FUNCTION synchro.scope_function_reads(p_proc regprocedure) RETURNS oid[]
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_owner oid := (SELECT proowner FROM pg_proc WHERE oid = p_proc);
  v_read record;
  v_sources oid[] := '{}';
BEGIN
  FOR v_read IN
    SELECT DISTINCT r.relid, v.relation_oid
      FROM (SELECT d.refobjid AS relid FROM pg_depend d
             WHERE d.classid = 'pg_proc'::regclass AND d.objid = p_proc AND d.refclassid = 'pg_class'::regclass
            UNION
            SELECT m[1]::oid FROM pg_proc p, regexp_matches(p.prosqlbody::text, ':relid (\d+)', 'g') AS m WHERE p.oid = p_proc) r
      LEFT JOIN synchro.projection_views v ON v.projection_oid = r.relid
     -- A dependency on a column type's relation (a composite argument) is not a read.
     WHERE EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = r.relid AND c.relkind NOT IN ('c'))
  LOOP
    IF v_read.relation_oid IS NULL THEN
      PERFORM synchro.registration_error('undeclared_dependency');
    END IF;
    IF NOT has_schema_privilege(v_owner, 'synchro_projection', 'USAGE') OR NOT has_table_privilege(v_owner, v_read.relid, 'SELECT') THEN
      PERFORM synchro.registration_error('invalid_scope_function');
    END IF;
    v_sources := v_sources || v_read.relation_oid;
  END LOOP;
  RETURN v_sources;
END
$$;

-- What a registered membership function reads beyond its own relation. Each
-- such relation needs a dependency declaration (with its impact function) by
-- the end of the registering transaction: registering the table, its
-- capture-only dependencies and the dependency declarations can then happen
-- in any order inside one transaction.
CREATE TABLE synchro.membership_reads (
  table_id text NOT NULL REFERENCES synchro.relations (table_id),
  relation_oid oid NOT NULL,
  PRIMARY KEY (table_id, relation_oid)
);
REVOKE ALL ON synchro.membership_reads FROM PUBLIC;
GRANT SELECT ON synchro.membership_reads TO synchro_operator, synchro_worker;

CREATE FUNCTION synchro.membership_reads_record(p_table text, p_proc regprocedure) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_own oid := (SELECT physical_relation_oid FROM synchro.relations WHERE table_id = p_table);
BEGIN
  DELETE FROM synchro.membership_reads WHERE table_id = p_table;
  INSERT INTO synchro.membership_reads
    SELECT p_table, r FROM unnest(synchro.scope_function_reads(p_proc)) AS r WHERE r <> v_own ON CONFLICT DO NOTHING;
END
$$;

CREATE FUNCTION synchro.membership_reads_declared() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM synchro.membership_reads m WHERE m.table_id = NEW.table_id AND m.relation_oid = NEW.relation_oid)
     AND NOT EXISTS (SELECT 1 FROM synchro.membership_dependencies d JOIN synchro.relations r ON r.relation_id = d.dependency_relation_id AND r.active
                      WHERE d.source_table_id = NEW.table_id AND r.physical_relation_oid = NEW.relation_oid) THEN
    PERFORM synchro.registration_error('undeclared_dependency');
  END IF;
  RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER membership_reads_declared AFTER INSERT ON synchro.membership_reads
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION synchro.membership_reads_declared();

REVOKE EXECUTE ON FUNCTION synchro.projection_ensure(oid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.scope_function_forbidden_builtin(oid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.scope_function_calls(regprocedure) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.membership_reads_declared() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.synchro_prepare_projection_view(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.scope_function_contract(regprocedure) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.scope_function_reads(regprocedure) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.membership_reads_record(text, regprocedure) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.projection_ensure(oid) TO synchro_operator;
-- The capture worker finds each registered membership function (and so its owner) the same way.
GRANT EXECUTE ON FUNCTION synchro.function_by_name(text, oid[]) TO synchro_operator, synchro_worker;
GRANT EXECUTE ON FUNCTION synchro.scope_function_forbidden_builtin(oid) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.scope_function_calls(regprocedure) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_prepare_projection_view(text) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.scope_function_contract(regprocedure) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.scope_function_reads(regprocedure) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.membership_reads_record(text, regprocedure) TO synchro_operator;
