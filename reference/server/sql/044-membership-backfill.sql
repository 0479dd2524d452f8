-- Staged membership backfill: a membership rule change run as a job of its own.
--
-- synchro_reconfigure_membership (024) does the whole change in one
-- transaction and holds writers of the table off meanwhile. A backfill
-- instead stages the new edge set beside the live one, a bounded batch per
-- transaction, while writers, capture, pull and rebuild keep running on the
-- live (prior) generation:
--
--   synchro_begin_membership_backfill(relation, fn, batch_size)  validates and records the job
--   synchro_membership_backfill_batch(backfill_id)                stages the next batch of rows
--   synchro_activate_membership_backfill(backfill_id)             catches up and activates
--
-- Nothing of a backfill is visible to clients before activation: it writes
-- only its own staging tables. Activation holds writers off once, waits until
-- the main worker has materialized every committed write of the table,
-- re-evaluates every row written since it was staged (the catch-up), then
-- hands the complete staged set to the same activation 024 uses, so the
-- registry generation, the edges, the scope contents and the membership
-- generations of the affected scopes change in that one transaction. The
-- prior generation stays what open cursors and rebuild sessions are judged
-- against: they go stale (409), they are not discarded.
--
-- Approximation (docs/decisions.md 170): batches run in separate transactions,
-- not on one exported REPEATABLE READ snapshot; each staged row records the
-- projection version it was evaluated at, and the catch-up re-evaluates every
-- row whose version moved, so the activated set equals an evaluation at the
-- activation boundary.

CREATE TABLE synchro.membership_backfills (
  backfill_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  table_id text NOT NULL,
  relation_oid oid NOT NULL,
  membership_function text NOT NULL,
  function_owner text NOT NULL,
  key_column text NOT NULL,
  key_sql text NOT NULL,
  projection text NOT NULL,
  max_scope_fanout integer,
  batch_size integer NOT NULL CHECK (batch_size > 0),
  state text NOT NULL DEFAULT 'staging' CHECK (state IN ('staging', 'activated')),
  -- The main worker's durable read boundary when staging began.
  start_boundary pg_lsn NOT NULL,
  batches_run integer NOT NULL DEFAULT 0,
  last_key text,
  staged_all boolean NOT NULL DEFAULT false,
  activation_position_kind text CHECK (activation_position_kind IN ('generation_start', 'transaction_end')),
  activation_boundary pg_lsn,
  registry_generation bigint,
  membership_generations jsonb,
  activation_xid text
);
-- One pending change per table: two staged sets could not both activate.
CREATE UNIQUE INDEX membership_backfills_pending ON synchro.membership_backfills (table_id) WHERE state = 'staging';

-- Rows a backfill evaluated, with the projection version each was evaluated at.
CREATE TABLE synchro.membership_backfill_keys (
  backfill_id bigint NOT NULL REFERENCES synchro.membership_backfills ON DELETE CASCADE,
  pk_text text NOT NULL,
  server_version text NOT NULL,
  PRIMARY KEY (backfill_id, pk_text)
);

-- The staged edges: held apart from synchro.membership_edges until activation.
CREATE TABLE synchro.membership_backfill_edges (
  backfill_id bigint NOT NULL,
  pk_text text NOT NULL,
  scope_id text,
  FOREIGN KEY (backfill_id, pk_text) REFERENCES synchro.membership_backfill_keys ON DELETE CASCADE
);
CREATE INDEX membership_backfill_edges_key ON synchro.membership_backfill_edges (backfill_id, pk_text);

-- The main worker's durable read boundary, the one pull and rebuild read at:
-- the commit of the last transaction it materialized (a transaction end), or
-- the generation start before it has materialized any.
CREATE FUNCTION synchro.membership_backfill_boundary(OUT position_kind text, OUT lsn pg_lsn)
LANGUAGE sql STABLE SET search_path = pg_catalog, synchro AS $$
  SELECT CASE WHEN w.materialized_commit_lsn IS NULL THEN 'generation_start' ELSE 'transaction_end' END,
         coalesce(w.materialized_commit_lsn, w.generation_start_lsn)
    FROM synchro.wal_progress w
$$;

-- Records a validated job. Nothing is locked and nothing live is written.
CREATE FUNCTION synchro.synchro_begin_membership_backfill(p_relation text, p_membership_fn text, p_batch_size integer, p_max_scope_fanout integer DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_oid oid := to_regclass(p_relation);
  v_rel record;
  v_key_type oid;
  v_proc regprocedure;
  v_fn text;
  v_boundary record;
  v_id bigint;
BEGIN
  IF v_oid IS NULL OR array_length(parse_ident(p_relation), 1) <> 2 THEN
    RAISE EXCEPTION 'give the schema-qualified name of a registered relation' USING ERRCODE = '22023';
  END IF;
  IF p_membership_fn IS NULL THEN
    PERFORM synchro.registration_error('invalid_scope_function');
  END IF;
  IF p_batch_size IS NULL OR p_batch_size <= 0 OR (p_max_scope_fanout IS NOT NULL AND p_max_scope_fanout <= 0) THEN
    PERFORM synchro.registration_error('invalid_limit');
  END IF;
  SELECT * INTO v_rel FROM synchro.relations WHERE physical_relation_oid = v_oid AND active;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'relation is not registered' USING ERRCODE = '42704';
  END IF;
  IF v_rel.kind <> 'synced' THEN
    RAISE EXCEPTION 'only a synced table has a membership function' USING ERRCODE = '22023';
  END IF;
  SELECT a.atttypid INTO v_key_type FROM pg_attribute a WHERE a.attrelid = v_oid AND a.attname = v_rel.pk_column;
  v_proc := synchro.membership_function_check(p_membership_fn, v_key_type);
  SELECT format('%I.%I', n.nspname, p.proname) INTO v_fn FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.oid = v_proc;
  SELECT * INTO v_boundary FROM synchro.membership_backfill_boundary();
  IF v_boundary.lsn IS NULL THEN
    RAISE EXCEPTION 'capture has not started: a backfill needs the main worker''s boundary' USING ERRCODE = '55000';
  END IF;
  IF EXISTS (SELECT 1 FROM synchro.membership_backfills WHERE table_id = v_rel.table_id AND state = 'staging') THEN
    RAISE EXCEPTION 'a membership backfill of this table is already staging' USING ERRCODE = '55000';
  END IF;
  INSERT INTO synchro.membership_backfills (table_id, relation_oid, membership_function, function_owner, key_column, key_sql, projection,
      max_scope_fanout, batch_size, start_boundary)
    VALUES (v_rel.table_id, v_oid, v_fn, (SELECT pg_get_userbyid(proowner) FROM pg_proc WHERE oid = v_proc), v_rel.pk_column,
      format_type(v_key_type, NULL), v_rel.physical_relation, p_max_scope_fanout, p_batch_size, v_boundary.lsn)
    RETURNING backfill_id INTO v_id;
  RETURN v_id;
END
$$;

-- The job of a staging backfill, as the evaluation and the activation need it.
CREATE FUNCTION synchro.membership_backfill_job(p_backfill bigint) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_job jsonb;
BEGIN
  SELECT to_jsonb(b) INTO v_job FROM synchro.membership_backfills b WHERE backfill_id = p_backfill AND state = 'staging' FOR UPDATE;
  IF v_job IS NULL THEN
    RAISE EXCEPTION 'membership backfill % is not staging', p_backfill USING ERRCODE = '55000';
  END IF;
  RETURN v_job;
END
$$;

-- The next batch of projected rows after the last staged key, each with its
-- projection version, read before the function evaluates them: a write landing
-- in between leaves an older version recorded, which the catch-up re-evaluates.
CREATE FUNCTION synchro.membership_backfill_next(p_job jsonb, OUT keys text[], OUT versions text[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
BEGIN
  EXECUTE format('SELECT array_agg(b.k ORDER BY b.o), array_agg(pr.server_version ORDER BY b.o)
      FROM (SELECT p.%1$I::text AS k, row_number() OVER (ORDER BY p.%1$I) AS o FROM synchro_projection.%2$I p
             WHERE $1::text IS NULL OR p.%1$I > $1::%3$s ORDER BY p.%1$I LIMIT $2) b
      JOIN synchro.projections pr ON pr.table_id = $3 AND pr.pk_text = b.k',
      p_job ->> 'key_column', p_job ->> 'projection', p_job ->> 'key_sql')
    INTO keys, versions USING p_job ->> 'last_key', (p_job ->> 'batch_size')::int, p_job ->> 'table_id';
  keys := coalesce(keys, '{}');
  versions := coalesce(versions, '{}');
END
$$;

-- Evaluates the new function for `p_keys` as the function's owner, never with
-- synchro_owner's rights (so not SECURITY DEFINER: it switches roles).
CREATE FUNCTION synchro.membership_backfill_evaluate(p_job jsonb, p_keys text[], OUT edge_keys text[], OUT edge_scopes text[])
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_caller text := current_user;
BEGIN
  edge_keys := '{}';
  edge_scopes := '{}';
  IF cardinality(p_keys) = 0 THEN
    RETURN;
  END IF;
  EXECUTE format('SET LOCAL ROLE %I', p_job ->> 'function_owner');
  EXECUTE format('SELECT coalesce(array_agg(u.k ORDER BY u.n), ''{}''), coalesce(array_agg(s::text ORDER BY u.n), ''{}'')
      FROM unnest($1::text[]) WITH ORDINALITY AS u(k, n), LATERAL %1$s(u.k::%2$s) AS s', p_job ->> 'membership_function', p_job ->> 'key_sql')
    INTO edge_keys, edge_scopes USING p_keys;
  EXECUTE format('SET LOCAL ROLE %I', v_caller);
END
$$;

-- Writes one evaluated batch to the staging tables, replacing what was staged for those keys.
CREATE FUNCTION synchro.membership_backfill_stage(p_backfill bigint, p_keys text[], p_versions text[], p_edge_keys text[], p_edge_scopes text[], p_advance boolean) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
BEGIN
  DELETE FROM synchro.membership_backfill_keys WHERE backfill_id = p_backfill AND pk_text = ANY (p_keys);
  INSERT INTO synchro.membership_backfill_keys (backfill_id, pk_text, server_version)
    SELECT p_backfill, k, v FROM unnest(p_keys, p_versions) AS u(k, v);
  INSERT INTO synchro.membership_backfill_edges (backfill_id, pk_text, scope_id)
    SELECT p_backfill, k, sc FROM unnest(p_edge_keys, p_edge_scopes) AS u(k, sc);
  IF p_advance THEN
    UPDATE synchro.membership_backfills
       SET batches_run = batches_run + 1, last_key = coalesce(p_keys[cardinality(p_keys)], last_key), staged_all = cardinality(p_keys) = 0
     WHERE backfill_id = p_backfill;
  END IF;
END
$$;

-- Stages the next batch in the caller's transaction. Returns the number of
-- rows staged; 0 means every row projected so far has been staged once.
CREATE FUNCTION synchro.synchro_membership_backfill_batch(p_backfill bigint) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_job jsonb := synchro.membership_backfill_job(p_backfill);
  v_next record;
  v_edges record;
BEGIN
  SELECT * INTO v_next FROM synchro.membership_backfill_next(v_job);
  SELECT * INTO v_edges FROM synchro.membership_backfill_evaluate(v_job, v_next.keys);
  PERFORM synchro.membership_backfill_stage(p_backfill, v_next.keys, v_next.versions, v_edges.edge_keys, v_edges.edge_scopes, true);
  RETURN cardinality(v_next.keys);
END
$$;

-- Rows whose staged evaluation no longer holds at the activation boundary:
-- never staged, or written since (their projection version moved). A rule
-- reading declared dependencies can change without its own row moving, so
-- then every row is evaluated again. Staged rows that left the projection
-- (deleted) are dropped here.
CREATE FUNCTION synchro.membership_backfill_catch_up(p_job jsonb, OUT keys text[], OUT versions text[])
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_id bigint := (p_job ->> 'backfill_id')::bigint;
  v_all boolean := EXISTS (SELECT 1 FROM synchro.membership_dependencies d WHERE d.source_table_id = p_job ->> 'table_id');
BEGIN
  EXECUTE format('SELECT array_agg(p.%1$I::text ORDER BY p.%1$I) FROM synchro_projection.%2$I p', p_job ->> 'key_column', p_job ->> 'projection') INTO keys;
  keys := coalesce(keys, '{}');
  DELETE FROM synchro.membership_backfill_keys s WHERE s.backfill_id = v_id AND NOT (s.pk_text = ANY (keys));
  SELECT coalesce(array_agg(pr.pk_text ORDER BY u.n), '{}'), coalesce(array_agg(pr.server_version ORDER BY u.n), '{}') INTO keys, versions
    FROM unnest(keys) WITH ORDINALITY AS u(k, n)
    JOIN synchro.projections pr ON pr.table_id = p_job ->> 'table_id' AND pr.pk_text = u.k
    LEFT JOIN synchro.membership_backfill_keys s ON s.backfill_id = v_id AND s.pk_text = u.k
   WHERE v_all OR s.pk_text IS NULL
      OR s.server_version IS DISTINCT FROM pr.server_version;
END
$$;

-- Every staged edge of the backfill, as the arrays 024's activation takes.
CREATE FUNCTION synchro.membership_backfill_staged(p_backfill bigint, OUT keys text[], OUT scopes text[])
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
  SELECT coalesce(array_agg(pk_text ORDER BY pk_text, scope_id), '{}'), coalesce(array_agg(scope_id ORDER BY pk_text, scope_id), '{}')
    FROM synchro.membership_backfill_edges WHERE backfill_id = p_backfill
$$;

-- Marks the job activated in the activation's own transaction and drops its staging rows.
CREATE FUNCTION synchro.membership_backfill_finish(p_backfill bigint, p_result jsonb, p_kind text, p_boundary pg_lsn) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
BEGIN
  UPDATE synchro.membership_backfills
     SET state = 'activated', activation_position_kind = p_kind, activation_boundary = p_boundary,
         registry_generation = (p_result ->> 'registry_generation')::bigint, membership_generations = p_result -> 'membership_generations',
         activation_xid = pg_current_xact_id()::xid::text
   WHERE backfill_id = p_backfill;
  DELETE FROM synchro.membership_backfill_keys WHERE backfill_id = p_backfill;
END
$$;

-- Catches up and activates in the caller's single transaction. Runs with the
-- caller's rights for the lock, as 024's entry point does.
CREATE FUNCTION synchro.synchro_activate_membership_backfill(p_backfill bigint) RETURNS jsonb
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_job jsonb := synchro.membership_backfill_job(p_backfill);
  v_plan jsonb;
  v_todo record;
  v_edges record;
  v_staged record;
  v_boundary record;
  v_result jsonb;
BEGIN
  -- Writers wait from here to commit; the prepare step then waits until the main
  -- worker has materialized every committed write of the table (and its
  -- dependencies) and opens the next registry generation.
  EXECUTE format('LOCK TABLE %s IN SHARE MODE', (v_job ->> 'relation_oid')::oid::regclass);
  v_plan := synchro.membership_reconfigure_prepare((v_job ->> 'relation_oid')::oid, v_job ->> 'membership_function', (v_job ->> 'max_scope_fanout')::int);
  -- The catch-up: every row written since it was staged, evaluated with the same function.
  SELECT * INTO v_todo FROM synchro.membership_backfill_catch_up(v_job);
  SELECT * INTO v_edges FROM synchro.membership_backfill_evaluate(v_job, v_todo.keys);
  PERFORM synchro.membership_backfill_stage(p_backfill, v_todo.keys, v_todo.versions, v_edges.edge_keys, v_edges.edge_scopes, false);
  -- Writers are held off and capture has caught up: the worker's durable
  -- boundary now is the transaction end the staged set is complete at.
  SELECT * INTO v_boundary FROM synchro.membership_backfill_boundary();
  SELECT * INTO v_staged FROM synchro.membership_backfill_staged(p_backfill);
  v_result := synchro.membership_reconfigure_activate(v_plan, v_staged.keys, v_staged.scopes);
  PERFORM synchro.membership_backfill_finish(p_backfill, v_result, v_boundary.position_kind, v_boundary.lsn);
  RETURN v_result || jsonb_build_object('backfill_id', p_backfill, 'activation_boundary',
    jsonb_build_object('position_kind', v_boundary.position_kind, 'lsn', v_boundary.lsn::text));
END
$$;

REVOKE EXECUTE ON FUNCTION synchro.membership_backfill_boundary() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.synchro_begin_membership_backfill(text, text, integer, integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.membership_backfill_job(bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.membership_backfill_next(jsonb) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.membership_backfill_evaluate(jsonb, text[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.membership_backfill_stage(bigint, text[], text[], text[], text[], boolean) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.synchro_membership_backfill_batch(bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.membership_backfill_catch_up(jsonb) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.membership_backfill_staged(bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.membership_backfill_finish(bigint, jsonb, text, pg_lsn) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.synchro_activate_membership_backfill(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.membership_backfill_boundary() TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_begin_membership_backfill(text, text, integer, integer) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.membership_backfill_job(bigint) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.membership_backfill_next(jsonb) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.membership_backfill_evaluate(jsonb, text[]) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.membership_backfill_stage(bigint, text[], text[], text[], text[], boolean) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_membership_backfill_batch(bigint) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.membership_backfill_catch_up(jsonb) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.membership_backfill_staged(bigint) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.membership_backfill_finish(bigint, jsonb, text, pg_lsn) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_activate_membership_backfill(bigint) TO synchro_operator;
