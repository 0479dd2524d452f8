-- Compaction run by the operator in batches of scopes (SYNC-SCHEMA-007 Strict Positive Limits).
-- p_batch_size is how many scopes one call compacts, each through synchro_compact_scope, in
-- scope order after p_after; the caller repeats with the returned last_scope until it is NULL.
-- The batch size is a required positive integer: NULL, zero or a negative value is refused
-- (SQLSTATE 22023) before any scope is touched, never replaced by a default.
CREATE FUNCTION synchro.synchro_compact_scopes(p_batch_size integer, p_after text DEFAULT NULL) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_deleted jsonb := '{}'::jsonb;
  v_last text;
  v_scope text;
BEGIN
  IF p_batch_size IS NULL OR p_batch_size <= 0 THEN
    RAISE EXCEPTION 'invalid_limit: the compaction batch size must be a positive integer' USING ERRCODE = '22023';
  END IF;
  FOR v_scope IN
    SELECT s.scope_id FROM (SELECT DISTINCT scope_id FROM synchro.scope_effects) s
     WHERE p_after IS NULL OR s.scope_id > p_after ORDER BY s.scope_id LIMIT p_batch_size
  LOOP
    v_deleted := v_deleted || jsonb_build_object(v_scope, synchro.synchro_compact_scope(v_scope));
    v_last := v_scope;
  END LOOP;
  RETURN jsonb_build_object('deleted', v_deleted, 'last_scope', v_last);
END
$$;

REVOKE EXECUTE ON FUNCTION synchro.synchro_compact_scopes(integer, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.synchro_compact_scopes(integer, text) TO synchro_operator;
