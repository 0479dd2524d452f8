-- Table registration. The entry point runs with the caller's rights (it
-- creates triggers and grants on the caller's relation); the registry rows
-- are written by a SECURITY DEFINER step that only validated input reaches.

CREATE FUNCTION synchro.registration_error(p_reason text, p_field text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
BEGIN
  RAISE EXCEPTION '%', json_build_object('error', json_strip_nulls(json_build_object(
      'code', 'invalid_registration', 'reason', p_reason, 'field_id', p_field)))::text
    USING ERRCODE = '22023';
END
$$;

-- Portable type of a column, or NULL when the type has no portable form.
CREATE FUNCTION synchro.portable_type_of(p_type oid) RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, synchro AS $$
  SELECT CASE p_type
    WHEN 'text'::regtype THEN 'string' WHEN 'varchar'::regtype THEN 'string' WHEN 'bpchar'::regtype THEN 'string'
    WHEN 'uuid'::regtype THEN 'string' WHEN 'inet'::regtype THEN 'string' WHEN 'cidr'::regtype THEN 'string'
    WHEN 'macaddr'::regtype THEN 'string' WHEN 'macaddr8'::regtype THEN 'string'
    WHEN 'int4range'::regtype THEN 'string' WHEN 'int8range'::regtype THEN 'string' WHEN 'numrange'::regtype THEN 'string'
    WHEN 'int4multirange'::regtype THEN 'string' WHEN 'int8multirange'::regtype THEN 'string'
    WHEN 'nummultirange'::regtype THEN 'string'
    WHEN 'int2'::regtype THEN 'int' WHEN 'int4'::regtype THEN 'int' WHEN 'int8'::regtype THEN 'int64'
    WHEN 'numeric'::regtype THEN 'decimal'
    WHEN 'float4'::regtype THEN 'float' WHEN 'float8'::regtype THEN 'float'
    WHEN 'bool'::regtype THEN 'boolean' WHEN 'timestamptz'::regtype THEN 'datetime'
    WHEN 'date'::regtype THEN 'date' WHEN 'time'::regtype THEN 'time'
    WHEN 'json'::regtype THEN 'json' WHEN 'jsonb'::regtype THEN 'json' WHEN 'bytea'::regtype THEN 'bytes'
  END
$$;

-- Writes one validated registration and activates a new registry generation.
-- A capture dependency (kind capture_dependency) has no client table: its
-- internal table_id takes the prefix 'd', which no manifest ever carries.
CREATE FUNCTION synchro.registry_activate(p_reg jsonb, p_fields jsonb) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_gen bigint;
  v_kind text := coalesce(p_reg ->> 'kind', 'synced');
  v_seq bigint := nextval('synchro.logical_id_seq');
  v_table text := CASE WHEN v_kind = 'synced' THEN 't' ELSE 'd' END || v_seq;
  v_pk_field text;
  v_field jsonb;
  v_n int := 0;
BEGIN
  LOCK TABLE synchro.registry_generations IN EXCLUSIVE MODE;
  IF EXISTS (SELECT 1 FROM synchro.relations WHERE physical_relation_oid = (p_reg ->> 'oid')::oid AND active) THEN
    RAISE EXCEPTION 'relation %.% is already registered', p_reg ->> 'schema', p_reg ->> 'relation' USING ERRCODE = '42710';
  END IF;
  SELECT coalesce(max(generation), 0) + 1 INTO v_gen FROM synchro.registry_generations;
  INSERT INTO synchro.registry_generations VALUES (v_gen, 'active', true, now());
  -- Capture reads each transaction against the registry it was written under: it reloads at this message.
  PERFORM pg_logical_emit_message(true, 'synchro_registry', v_gen::text);
  -- Logical IDs come from a sequence: never derived from names, never reused.
  FOR v_field IN SELECT * FROM jsonb_array_elements(p_fields) LOOP
    v_n := v_n + 1;
    IF v_field ->> 'column' = p_reg ->> 'pk_column' THEN
      v_pk_field := v_table || 'f' || v_n;
    END IF;
  END LOOP;
  INSERT INTO synchro.relations (relation_id, table_id, registry_generation, kind, physical_schema, physical_relation,
    physical_relation_oid, replica_identity, pk_column, pk_field_id, pk_type, updated_at_column, deleted_at_column,
    push_policy, composition, membership_function, max_scope_fanout)
  VALUES ('r' || v_seq, v_table, v_gen, v_kind, p_reg ->> 'schema', p_reg ->> 'relation', (p_reg ->> 'oid')::oid, 'd',
    p_reg ->> 'pk_column', v_pk_field, p_reg ->> 'pk_type', p_reg ->> 'updated_at', p_reg ->> 'deleted_at',
    p_reg ->> 'push_policy', p_reg ->> 'composition', p_reg ->> 'membership_function', (p_reg ->> 'max_scope_fanout')::int);
  v_n := 0;
  FOR v_field IN SELECT * FROM jsonb_array_elements(p_fields) LOOP
    v_n := v_n + 1;
    INSERT INTO synchro.fields VALUES (v_table, v_table || 'f' || v_n, v_field ->> 'column', v_field ->> 'type',
      (v_field ->> 'nullable')::boolean, (v_field ->> 'writable')::boolean, (v_field ->> 'generated')::boolean,
      (v_field ->> 'precision')::int, (v_field ->> 'scale')::int);
  END LOOP;
  RETURN v_table;
END
$$;

-- First versions for the rows a relation already holds when it is registered.
CREATE FUNCTION synchro.fence_backfill(p_table text, p_oid oid, p_key text, p_deleted text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
BEGIN
  EXECUTE format(
    'INSERT INTO synchro.row_versions (table_id, pk_text, state, server_version)
     SELECT $1, to_jsonb(t) ->> $2,
            CASE WHEN $3 <> '''' AND to_jsonb(t) ->> $3 IS NOT NULL THEN ''deleted'' ELSE ''live'' END,
            ''v'' || replace(gen_random_uuid()::text, ''-'', '''')
       FROM %s t
     ON CONFLICT (table_id, pk_text) DO NOTHING', p_oid::regclass)
  USING p_table, p_key, p_deleted;
END
$$;

-- The one check a membership function passes, at registration and at every
-- later change of the rule: it takes the registered key type as its only
-- argument, returns a set of text and is not VOLATILE (a volatile function
-- could write, and could place the same row differently on replay).
-- Returns the resolved function.
-- A function by schema-qualified name and exact argument types, read from the catalog: no
-- search_path, and no USAGE on the schema needed by the definer functions that call it.
CREATE FUNCTION synchro.function_by_name(p_fn text, p_args oid[]) RETURNS regprocedure
LANGUAGE sql STABLE SET search_path = pg_catalog, synchro AS $$
  SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
   WHERE array_length(parse_ident(p_fn), 1) = 2 AND n.nspname = (parse_ident(p_fn))[1] AND p.proname = (parse_ident(p_fn))[2]
     AND p.proargtypes::text = array_to_string(p_args, ' ')
$$;

CREATE FUNCTION synchro.membership_function_check(p_fn text, p_key_type oid) RETURNS regprocedure
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_proc regprocedure;
BEGIN
  -- Schema-qualified, and exactly fn(<key type>) RETURNS SETOF text with no default or VARIADIC.
  IF p_fn IS NULL OR array_length(parse_ident(p_fn), 1) <> 2 THEN
    PERFORM synchro.registration_error('invalid_scope_function');
  END IF;
  v_proc := synchro.function_by_name(p_fn, ARRAY[p_key_type]);
  IF v_proc IS NULL OR NOT EXISTS (SELECT 1 FROM pg_proc WHERE oid = v_proc AND proretset AND prorettype = 'text'::regtype
                                     AND pronargdefaults = 0 AND provariadic = 0) THEN
    PERFORM synchro.registration_error('invalid_scope_function');
  END IF;
  -- Language, volatility, rights and calls (026-scope-function-contract.sql); what it reads is
  -- recorded once the table is known (membership_reads_record).
  PERFORM synchro.scope_function_contract(v_proc);
  PERFORM synchro.scope_function_reads(v_proc);
  RETURN v_proc;
END
$$;

-- Registration of one relation, synced or capture-only (p_kind): both
-- kinds share the name resolution, the key and replica identity rules, the
-- fence, key guard and truncate guard triggers, the publication and the
-- projection. Only a synced table is ever published to clients or pushed to.
CREATE FUNCTION synchro.registration_register(
  p_kind text,
  p_relation text,
  p_membership_fn text,
  p_composition text,
  p_pk_column text,
  p_updated_at_col text,
  p_deleted_at_col text,
  p_push_policy text,
  p_exclude_columns text[],
  p_sync_columns text[],
  p_max_scope_fanout integer
) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
#variable_conflict use_column
DECLARE
  v_parts text[];
  v_oid oid;
  v_count int;
  v_schema text;
  v_name text;
  v_ident "char";
  v_con record;
  v_pk_att record;
  v_pk_type text;
  v_att record;
  v_fields jsonb := '[]'::jsonb;
  v_type text;
  v_table text;
  v_qualified text;
  v_proc regprocedure;
BEGIN
  IF p_max_scope_fanout IS NULL OR p_max_scope_fanout <= 0 THEN
    PERFORM synchro.registration_error('invalid_limit');
  END IF;
  IF p_push_policy IS NULL OR p_push_policy NOT IN ('enabled', 'disabled') OR p_composition IS NULL
     OR p_composition NOT IN ('single_scope', 'multi_scope') THEN
    RAISE EXCEPTION 'push policy must be enabled or disabled and composition single_scope or multi_scope' USING ERRCODE = '22023';
  END IF;
  IF p_exclude_columns IS NOT NULL AND p_sync_columns IS NOT NULL THEN
    RAISE EXCEPTION 'give either sync columns or exclude columns, not both' USING ERRCODE = '22023';
  END IF;

  -- Resolve the relation without search_path: a qualified name exactly, a bare name only when unique.
  v_parts := parse_ident(p_relation);
  IF array_length(v_parts, 1) = 2 THEN
    SELECT c.oid INTO v_oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = v_parts[1] AND c.relname = v_parts[2] AND c.relkind IN ('r', 'p');
  ELSIF array_length(v_parts, 1) = 1 THEN
    SELECT count(*), min(c.oid) INTO v_count, v_oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relname = v_parts[1] AND c.relkind IN ('r', 'p')
       AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'synchro') AND n.nspname NOT LIKE 'pg\_%';
    IF v_count > 1 THEN
      PERFORM synchro.registration_error('ambiguous_physical_relation');
    END IF;
  END IF;
  IF v_oid IS NULL THEN
    RAISE EXCEPTION 'relation % does not exist', p_relation USING ERRCODE = '42P01';
  END IF;
  SELECT n.nspname, c.relname, c.relreplident INTO v_schema, v_name, v_ident
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = v_oid;
  IF v_schema = 'synchro' THEN
    RAISE EXCEPTION 'synchro metadata cannot be registered' USING ERRCODE = '22023';
  END IF;
  v_qualified := format('%I.%I', v_schema, v_name);

  -- Key: exactly one NOT NULL, immediate primary key column of a portable key type (checked by type OID).
  SELECT * INTO v_con FROM pg_constraint WHERE conrelid = v_oid AND contype = 'p';
  IF NOT FOUND THEN
    PERFORM synchro.registration_error('missing_primary_key');
  END IF;
  IF array_length(v_con.conkey, 1) <> 1 THEN
    PERFORM synchro.registration_error('composite_primary_key');
  END IF;
  IF v_con.condeferrable THEN
    PERFORM synchro.registration_error('unsupported_primary_key_type');
  END IF;
  SELECT a.attname, a.atttypid, a.attnotnull, a.atthasdef, a.attidentity, a.attgenerated INTO v_pk_att
    FROM pg_attribute a WHERE a.attrelid = v_oid AND a.attnum = v_con.conkey[1];
  IF p_pk_column IS NOT NULL AND p_pk_column <> v_pk_att.attname THEN
    PERFORM synchro.registration_error('missing_primary_key');
  END IF;
  IF NOT v_pk_att.attnotnull THEN
    PERFORM synchro.registration_error('nullable_primary_key');
  END IF;
  v_pk_type := synchro.portable_type_of(v_pk_att.atttypid);
  IF v_pk_type IS NULL OR v_pk_type NOT IN ('string', 'int', 'int64') THEN
    PERFORM synchro.registration_error('unsupported_primary_key_type');
  END IF;
  IF p_push_policy = 'enabled' AND (v_pk_att.atthasdef OR v_pk_att.attidentity <> '' OR v_pk_att.attgenerated <> '') THEN
    -- Clients author keys offline; a database-generated key could not be honoured.
    PERFORM synchro.registration_error('unsupported_primary_key_type');
  END IF;
  IF v_ident <> 'd' THEN
    PERFORM synchro.registration_error('unsupported_replica_identity');
  END IF;
  IF p_membership_fn IS NOT NULL THEN
    v_proc := synchro.membership_function_check(p_membership_fn, v_pk_att.atttypid);
  END IF;

  -- Synced fields: the chosen shape always keeps the key and the lifecycle columns.
  FOR v_att IN
    SELECT a.attname, a.atttypid, a.attnotnull, a.attidentity, a.attgenerated, a.atttypmod
      FROM pg_attribute a WHERE a.attrelid = v_oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum
  LOOP
    CONTINUE WHEN p_sync_columns IS NOT NULL AND NOT (v_att.attname = ANY (p_sync_columns))
      AND v_att.attname NOT IN (v_pk_att.attname, coalesce(p_updated_at_col, ''), coalesce(p_deleted_at_col, ''));
    CONTINUE WHEN p_exclude_columns IS NOT NULL AND v_att.attname = ANY (p_exclude_columns)
      AND v_att.attname NOT IN (v_pk_att.attname, coalesce(p_updated_at_col, ''), coalesce(p_deleted_at_col, ''));
    v_type := synchro.portable_type_of(v_att.atttypid);
    IF v_type IS NULL OR (v_type = 'decimal' AND v_att.atttypmod < 0) THEN
      PERFORM synchro.registration_error('unsupported_field_type', v_att.attname);
    END IF;
    IF v_att.attname IN (coalesce(p_updated_at_col, ''), coalesce(p_deleted_at_col, '')) AND v_type <> 'datetime' THEN
      PERFORM synchro.registration_error('invalid_lifecycle_field', v_att.attname);
    END IF;
    v_fields := v_fields || jsonb_build_object(
      'column', v_att.attname, 'type', v_type, 'nullable', NOT v_att.attnotnull,
      'generated', v_att.attidentity = 'a' OR v_att.attgenerated <> '',
      'writable', p_push_policy = 'enabled' AND v_att.attname NOT IN (v_pk_att.attname, coalesce(p_updated_at_col, ''), coalesce(p_deleted_at_col, ''))
                  AND v_att.attidentity <> 'a' AND v_att.attgenerated = '',
      'precision', CASE WHEN v_type = 'decimal' THEN ((v_att.atttypmod - 4) >> 16) & 65535 END,
      'scale', CASE WHEN v_type = 'decimal' THEN (v_att.atttypmod - 4) & 65535 END);
  END LOOP;
  IF p_updated_at_col IS NOT NULL AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(v_fields) f WHERE f ->> 'column' = p_updated_at_col) THEN
    PERFORM synchro.registration_error('invalid_lifecycle_field', p_updated_at_col);
  END IF;
  IF p_deleted_at_col IS NOT NULL AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(v_fields) f WHERE f ->> 'column' = p_deleted_at_col) THEN
    PERFORM synchro.registration_error('invalid_lifecycle_field', p_deleted_at_col);
  END IF;

  v_table := synchro.registry_activate(jsonb_build_object(
      'schema', v_schema, 'relation', v_name, 'oid', v_oid, 'pk_column', v_pk_att.attname, 'pk_type', v_pk_type,
      'updated_at', p_updated_at_col, 'deleted_at', p_deleted_at_col, 'push_policy', p_push_policy,
      'composition', p_composition, 'max_scope_fanout', p_max_scope_fanout,
      -- Stored schema-qualified and quoted, so the worker calls exactly the checked function.
      'membership_function', (SELECT format('%I.%I', n.nspname, p.proname) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.oid = v_proc),
      'kind', p_kind),
    v_fields);
  IF v_proc IS NOT NULL THEN
    PERFORM synchro.membership_reads_record(v_table, v_proc);
  END IF;

  -- The push path runs as synchro_owner; it needs exactly these rights on the source relation.
  -- A capture dependency gets the same ones (the baseline's share lock needs more than SELECT);
  -- no push ever names it, since push resolves synced tables only.
  EXECUTE format('GRANT USAGE ON SCHEMA %I TO synchro_owner', v_schema);
  EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s TO synchro_owner', v_qualified);
  EXECUTE format('CREATE TRIGGER synchro_primary_key_guard BEFORE UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION synchro.synchro_primary_key_guard(%L)',
    v_qualified, v_pk_att.attname);
  EXECUTE format('CREATE TRIGGER synchro_capture_fence AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION synchro.synchro_capture_fence(%L, %L, %L)',
    v_qualified, v_table, v_pk_att.attname, coalesce(p_deleted_at_col, ''));
  EXECUTE format('CREATE TRIGGER synchro_capture_truncate_guard BEFORE TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION synchro.synchro_capture_truncate_guard()',
    v_qualified);
  -- Creating the triggers locked out writers; rows already present get their first version now.
  PERFORM synchro.fence_backfill(v_table, v_oid, v_pk_att.attname, coalesce(p_deleted_at_col, ''));
  -- Capture sees the relation from this transaction on. Adding it to the publication needs the
  -- publication owner's rights; without them the capture worker adds it when it next starts.
  BEGIN
    EXECUTE format('ALTER PUBLICATION synchro_capture ADD TABLE %s', v_qualified);
  EXCEPTION WHEN undefined_object OR insufficient_privilege OR duplicate_object THEN
    NULL;
  END;
  -- Membership functions read the worker's commit-ordered projection, never the live relation.
  PERFORM synchro.projection_create(v_table);
  -- Rows already present reach the projections through baseline messages in this transaction.
  PERFORM synchro.capture_baseline(v_table);
  RETURN v_table;
END
$$;

-- Parameter names are the upstream ones, so callers can use named notation.
CREATE FUNCTION synchro.synchro_register_table(
  relation text,
  membership_fn text DEFAULT NULL,
  composition text DEFAULT 'single_scope',
  pk_column text DEFAULT NULL,
  updated_at_col text DEFAULT NULL,
  deleted_at_col text DEFAULT NULL,
  push_policy text DEFAULT 'enabled',
  exclude_columns text[] DEFAULT NULL,
  sync_columns text[] DEFAULT NULL,
  max_scope_fanout integer DEFAULT 1000
) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
BEGIN
  RETURN synchro.registration_register('synced', $1, $2, $3, $4, $5, $6, $7, $8, $9, $10);
END
$$;

-- Removing a table from sync: the registration stays on record (inactive),
-- its fences stay, and the next manifest no longer lists it (a Class 4 step).
-- Opens the next registry generation for a change to one registered relation:
-- serializes registry changes, finds the relation's active logical table and
-- records the new generation. Callers then write their change under it.
CREATE FUNCTION synchro.registry_next_generation(p_oid oid, OUT table_id text, OUT generation bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
BEGIN
  LOCK TABLE synchro.registry_generations IN EXCLUSIVE MODE;
  SELECT r.table_id INTO table_id FROM synchro.relations r WHERE r.physical_relation_oid = p_oid AND r.active;
  IF table_id IS NULL THEN
    RAISE EXCEPTION 'relation is not registered' USING ERRCODE = '42704';
  END IF;
  SELECT coalesce(max(g.generation), 0) + 1 INTO generation FROM synchro.registry_generations g;
  INSERT INTO synchro.registry_generations VALUES (generation, 'active', true, now());
  -- Capture reads each transaction against the registry it was written under: it reloads at this message.
  PERFORM pg_logical_emit_message(true, 'synchro_registry', generation::text);
END
$$;

CREATE FUNCTION synchro.registry_deactivate(p_oid oid) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_next record;
BEGIN
  v_next := synchro.registry_next_generation(p_oid);
  UPDATE synchro.relations SET active = false, registry_generation = v_next.generation WHERE table_id = v_next.table_id;
  RETURN v_next.table_id;
END
$$;

CREATE FUNCTION synchro.synchro_unregister_table(p_relation text) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_oid oid := to_regclass(p_relation);
  v_table text;
BEGIN
  IF v_oid IS NULL OR array_length(parse_ident(p_relation), 1) <> 2 THEN
    RAISE EXCEPTION 'give the schema-qualified name of a registered relation' USING ERRCODE = '22023';
  END IF;
  v_table := synchro.registry_deactivate(v_oid);
  EXECUTE format('DROP TRIGGER synchro_primary_key_guard ON %s', v_oid::regclass);
  EXECUTE format('DROP TRIGGER synchro_capture_fence ON %s', v_oid::regclass);
  EXECUTE format('DROP TRIGGER synchro_capture_truncate_guard ON %s', v_oid::regclass);
  BEGIN
    EXECUTE format('ALTER PUBLICATION synchro_capture DROP TABLE %s', v_oid::regclass);
  EXCEPTION WHEN undefined_object OR insufficient_privilege THEN
    NULL;
  END;
  RETURN v_table;
END
$$;
