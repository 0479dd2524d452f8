-- Changing the membership rule of a registered table through the registry.
--
-- synchro_reconfigure_membership(relation, membership_fn[, max_scope_fanout]) replaces the
-- function that places the table's rows in scopes. It never edits live
-- edges piecemeal: the new edge set is staged from the capture worker's
-- projections, checked as a whole, and activated in the caller's single
-- transaction together with the next registry generation, the new function
-- identity, the scope contents the pull and rebuild paths read, and one more
-- membership generation for each affected scope. A scope is affected when
-- its edges for this table differ between the live set and the staged one;
-- every other scope keeps its generation, so its cursors stay incremental.
-- A failed check raises before anything is written, and the transaction
-- rollback discards the registry generation opened for the change.

-- Staged edges of a pending change. Rows live only inside the transaction
-- that writes them: activation deletes them, a failure rolls them back.
CREATE TABLE synchro.membership_staging (
  table_id text NOT NULL,
  pk_text text NOT NULL,
  scope_id text
);
CREATE INDEX membership_staging_row ON synchro.membership_staging (table_id, pk_text);

-- Row identity octets, the same bytes the codec builds for a key
-- (domain, table ID, key field ID, typed key value). Scope contents are keyed
-- by them; staging has to produce them for rows that enter a scope.
CREATE FUNCTION synchro.row_identity(p_table text, p_field text, p_type text, p_key text) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT SET search_path = pg_catalog AS $$
  SELECT convert_to('synchro:v3:row-identity:v1', 'UTF8') || '\x00'::bytea
    || int8send(octet_length(convert_to(p_table, 'UTF8'))::int8) || convert_to(p_table, 'UTF8')
    || int8send(octet_length(convert_to(p_field, 'UTF8'))::int8) || convert_to(p_field, 'UTF8')
    || CASE p_type
         WHEN 'string' THEN '\x0101'::bytea || int8send(octet_length(convert_to(p_key, 'UTF8'))::int8) || convert_to(p_key, 'UTF8')
         WHEN 'int' THEN '\x0201'::bytea || int4send(p_key::int4)
         WHEN 'int64' THEN '\x0301'::bytea || int8send(p_key::int8)
       END
$$;

CREATE FUNCTION synchro.membership_error(p_reason text, p_state text, p_detail text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
BEGIN
  RAISE EXCEPTION '%', json_build_object('error', json_strip_nulls(json_build_object(
      'code', 'scope_evaluation_failed', 'reason', p_reason, 'detail', p_detail)))::text
    USING ERRCODE = p_state;
END
$$;

-- Committed row versions of the table the worker has not projected yet.
CREATE FUNCTION synchro.membership_capture_backlog(p_table text) RETURNS bigint
LANGUAGE sql STABLE SET search_path = pg_catalog, synchro AS $$
  SELECT count(*) FROM synchro.row_versions rv
    LEFT JOIN synchro.projections p ON p.table_id = rv.table_id AND p.pk_text = rv.pk_text
   WHERE rv.table_id = p_table AND rv.state <> 'reserved' AND p.server_version IS DISTINCT FROM rv.server_version
$$;

-- Step 1 (as synchro_owner): open the next registry generation, check the function and
-- wait until the projections hold every committed write of the table.
CREATE FUNCTION synchro.membership_reconfigure_prepare(p_oid oid, p_fn text, p_max_scope_fanout integer) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  c_wait constant interval := interval '30 seconds';
  v_rel record;
  v_next record;
  v_proc regprocedure;
  v_fn text;
  v_key_type oid;
  v_key_sql text;
  v_deadline timestamptz;
BEGIN
  -- Writers of the table wait from here to commit: nothing the staging reads can change under it.
  EXECUTE format('LOCK TABLE %s IN SHARE MODE', p_oid::regclass);
  -- Opening the generation first serializes every registry change behind this one.
  SELECT n.table_id, n.generation INTO v_next FROM synchro.registry_next_generation(p_oid) n;
  SELECT * INTO v_rel FROM synchro.relations WHERE table_id = v_next.table_id;
  IF v_rel.kind <> 'synced' THEN
    RAISE EXCEPTION 'only a synced table has a membership function' USING ERRCODE = '22023';
  END IF;
  SELECT a.atttypid INTO v_key_type FROM pg_attribute a WHERE a.attrelid = p_oid AND a.attname = v_rel.pk_column;
  v_key_sql := format_type(v_key_type, NULL);
  IF p_max_scope_fanout IS NOT NULL AND p_max_scope_fanout <= 0 THEN
    PERFORM synchro.registration_error('invalid_limit');
  END IF;
  v_rel.max_scope_fanout := coalesce(p_max_scope_fanout, v_rel.max_scope_fanout);
  v_proc := synchro.membership_function_check(p_fn, v_key_type);
  -- Stored schema-qualified, so the worker calls the same function whatever its search_path.
  SELECT format('%I.%I', n.nspname, p.proname) INTO v_fn FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.oid = v_proc;

  -- The projections are the state the worker evaluates; they must hold every write committed
  -- before the lock, or the worker would later place those rows with the old function.
  v_deadline := clock_timestamp() + c_wait;
  LOOP
    IF EXISTS (SELECT 1 FROM synchro.wal_poison WHERE lifecycle = 'active') THEN
      PERFORM synchro.membership_error('capture_blocked', '55000', 'capture is blocked by a quarantined transaction');
    END IF;
    -- The new rule may read the projections of the table's declared dependencies too.
    EXIT WHEN synchro.membership_capture_backlog(v_rel.table_id) = 0
      AND NOT EXISTS (SELECT 1 FROM synchro.membership_dependencies d
                       WHERE d.source_table_id = v_rel.table_id AND synchro.membership_capture_backlog(d.dependency_table_id) > 0);
    IF clock_timestamp() > v_deadline THEN
      PERFORM synchro.membership_error('capture_behind', '55000', 'capture has not materialized every committed change of the table; retry later');
    END IF;
    PERFORM pg_sleep(0.02);
  END LOOP;

  DELETE FROM synchro.membership_staging WHERE table_id = v_rel.table_id;
  RETURN jsonb_build_object('table_id', v_rel.table_id, 'generation', v_next.generation, 'function', v_fn,
    'owner', (SELECT pg_get_userbyid(proowner) FROM pg_proc WHERE oid = v_proc), 'procedure', v_proc::oid,
    'key_column', v_rel.pk_column, 'key_sql', v_key_sql, 'projection', v_rel.physical_relation, 'fanout', v_rel.max_scope_fanout);
END
$$;

-- Step 3 (as synchro_owner): check the staged edges as a whole and activate them.
CREATE FUNCTION synchro.membership_reconfigure_activate(p_plan jsonb, p_keys text[], p_scopes text[]) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_rel record;
  v_next record;
  v_fn text := p_plan ->> 'function';
  v_bad record;
  v_affected text[];
  v_added bigint;
  v_removed bigint;
  v_scopes jsonb;
BEGIN
  SELECT * INTO v_rel FROM synchro.relations WHERE table_id = p_plan ->> 'table_id';
  v_rel.max_scope_fanout := (p_plan ->> 'fanout')::int;
  SELECT v_rel.table_id, (p_plan ->> 'generation')::bigint AS generation INTO v_next;
  INSERT INTO synchro.membership_staging (table_id, pk_text, scope_id)
    SELECT v_rel.table_id, k, sc FROM unnest(p_keys, p_scopes) AS u(k, sc);

  -- Check the staged set as a whole, with the rules capture applies to one row.
  SELECT pk_text INTO v_bad FROM synchro.membership_staging
   WHERE table_id = v_rel.table_id
     AND (scope_id IS NULL OR length(scope_id) > 256 OR NOT (scope_id COLLATE "C" ~ '^[!-~]+$') OR scope_id = 'user:')
   LIMIT 1;
  IF FOUND THEN
    PERFORM synchro.membership_error('invalid_scope', '22023', 'the membership function returned an invalid scope for key ' || v_bad.pk_text);
  END IF;
  SELECT pk_text INTO v_bad FROM synchro.membership_staging WHERE table_id = v_rel.table_id
   GROUP BY pk_text HAVING count(DISTINCT scope_id) > v_rel.max_scope_fanout LIMIT 1;
  IF FOUND THEN
    PERFORM synchro.membership_error('fanout_exceeded', '22023', 'the membership result exceeds max_scope_fanout for key ' || v_bad.pk_text);
  END IF;

  -- Affected scopes: those whose edges for this table differ between the live and the staged set.
  WITH staged AS (SELECT DISTINCT pk_text, scope_id FROM synchro.membership_staging WHERE table_id = v_rel.table_id),
       live AS (SELECT pk_text, scope_id FROM synchro.membership_edges WHERE table_id = v_rel.table_id),
       diff AS ((SELECT * FROM live EXCEPT SELECT * FROM staged) UNION (SELECT * FROM staged EXCEPT SELECT * FROM live))
  SELECT coalesce(array_agg(DISTINCT scope_id COLLATE "C" ORDER BY scope_id COLLATE "C"), '{}') INTO v_affected FROM diff;

  -- Activate: function identity, edges, scope contents and generations, all in this transaction.
  UPDATE synchro.relations SET membership_function = v_fn, max_scope_fanout = v_rel.max_scope_fanout, registry_generation = v_next.generation
   WHERE table_id = v_rel.table_id;
  PERFORM synchro.membership_reads_record(v_rel.table_id, (p_plan ->> 'procedure')::oid::regprocedure);
  DELETE FROM synchro.membership_edges e
   WHERE e.table_id = v_rel.table_id
     AND NOT EXISTS (SELECT 1 FROM synchro.membership_staging s WHERE s.table_id = e.table_id AND s.pk_text = e.pk_text AND s.scope_id = e.scope_id);
  GET DIAGNOSTICS v_removed = ROW_COUNT;
  INSERT INTO synchro.membership_edges (table_id, pk_text, scope_id)
    SELECT DISTINCT table_id, pk_text, scope_id FROM synchro.membership_staging WHERE table_id = v_rel.table_id
  ON CONFLICT DO NOTHING;
  GET DIAGNOSTICS v_added = ROW_COUNT;
  -- Scope contents follow the edges exactly as materialization keeps them: live rows only.
  -- No pull effects are written: every scope whose contents change here is sent to rebuild.
  DELETE FROM synchro.scope_rows r
   WHERE r.table_id = v_rel.table_id AND r.scope_id = ANY (v_affected)
     AND NOT EXISTS (SELECT 1 FROM synchro.membership_edges e WHERE e.table_id = r.table_id AND e.pk_text = r.pk_text AND e.scope_id = r.scope_id);
  INSERT INTO synchro.scope_rows (scope_id, table_id, pk_bytes, pk_text, row_wire, server_version)
    SELECT e.scope_id, e.table_id, synchro.row_identity(e.table_id, v_rel.pk_field_id, v_rel.pk_type, e.pk_text), e.pk_text, p.row_wire, p.server_version
      FROM synchro.membership_edges e
      JOIN synchro.projections p ON p.table_id = e.table_id AND p.pk_text = e.pk_text AND NOT p.deleted
     WHERE e.table_id = v_rel.table_id AND e.scope_id = ANY (v_affected)
  ON CONFLICT (scope_id, table_id, pk_bytes) DO NOTHING;
  -- A missing state row stands for generation 1, so a first bump writes 2.
  INSERT INTO synchro.scope_state (scope_id, membership_generation)
    SELECT unnest(v_affected), 2
  ON CONFLICT (scope_id) DO UPDATE SET membership_generation = synchro.scope_state.membership_generation + 1;
  DELETE FROM synchro.membership_staging WHERE table_id = v_rel.table_id;

  SELECT coalesce(jsonb_object_agg(scope_id, membership_generation), '{}') INTO v_scopes
    FROM synchro.scope_state WHERE scope_id = ANY (v_affected);
  PERFORM pg_notify('synchro_capture', '');
  RETURN jsonb_build_object('table_id', v_rel.table_id, 'registry_generation', v_next.generation, 'membership_function', v_fn,
    'membership_generations', v_scopes, 'edges_added', v_added, 'edges_removed', v_removed);
END
$$;

-- Operator entry point. Runs with the caller's rights for the lock, so only
-- someone who may hold writers of the relation off can change its rule.
CREATE FUNCTION synchro.synchro_reconfigure_membership(p_relation text, p_membership_fn text, p_max_scope_fanout integer DEFAULT NULL) RETURNS jsonb
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
DECLARE
  c_batch constant int := 500;
  v_oid oid := to_regclass(p_relation);
  v_plan jsonb;
  v_caller text := current_user;
  v_keys text[];
  v_last text;
  v_staged_keys text[] := '{}';
  v_staged_scopes text[] := '{}';
BEGIN
  IF v_oid IS NULL OR array_length(parse_ident(p_relation), 1) <> 2 THEN
    RAISE EXCEPTION 'give the schema-qualified name of a registered relation' USING ERRCODE = '22023';
  END IF;
  IF p_membership_fn IS NULL THEN
    PERFORM synchro.registration_error('invalid_scope_function');
  END IF;
  EXECUTE format('LOCK TABLE %s IN SHARE MODE', v_oid::regclass);
  v_plan := synchro.membership_reconfigure_prepare(v_oid, p_membership_fn, p_max_scope_fanout);

  -- Step 2: evaluate the new function for every projected row, in key order, a bounded batch
  -- at a time, as the function's owner: it never runs with synchro_owner's rights (this body
  -- is not SECURITY DEFINER, so it may switch roles).
  BEGIN
    EXECUTE format('SET LOCAL ROLE %I', v_plan ->> 'owner');
    LOOP
      EXECUTE format('SELECT array_agg(k::text ORDER BY k) FROM (SELECT p.%1$I AS k FROM synchro_projection.%2$I p
          WHERE $1::text IS NULL OR p.%1$I > $1::%3$s ORDER BY p.%1$I LIMIT $2) b', v_plan ->> 'key_column', v_plan ->> 'projection', v_plan ->> 'key_sql')
        INTO v_keys USING v_last, c_batch;
      EXIT WHEN v_keys IS NULL;
      EXECUTE format('SELECT $1 || coalesce(array_agg(u.k ORDER BY u.n), ''{}''), $2 || coalesce(array_agg(s::text ORDER BY u.n), ''{}'')
          FROM unnest($3::text[]) WITH ORDINALITY AS u(k, n), LATERAL %1$s(u.k::%2$s) AS s', v_plan ->> 'function', v_plan ->> 'key_sql')
        INTO v_staged_keys, v_staged_scopes USING v_staged_keys, v_staged_scopes, v_keys;
      v_last := v_keys[array_length(v_keys, 1)];
    END LOOP;
    EXECUTE format('SET LOCAL ROLE %I', v_caller);
  EXCEPTION WHEN OTHERS THEN
    PERFORM synchro.membership_error('function_failed', '22023', 'the membership function failed: ' || SQLERRM);
  END;
  RETURN synchro.membership_reconfigure_activate(v_plan, v_staged_keys, v_staged_scopes);
END
$$;

REVOKE EXECUTE ON FUNCTION synchro.row_identity(text, text, text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.membership_error(text, text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.membership_capture_backlog(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.membership_reconfigure_activate(jsonb, text[], text[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.membership_reconfigure_prepare(oid, text, integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.synchro_reconfigure_membership(text, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.membership_function_check(text, oid) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.membership_reconfigure_activate(jsonb, text[], text[]) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.membership_reconfigure_prepare(oid, text, integer) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_reconfigure_membership(text, text, integer) TO synchro_operator;
