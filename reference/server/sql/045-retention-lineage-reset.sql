-- A controlled retention lineage reset of one scope (004 sheet, "Per-Scope
-- Retention and Client Generations": retention_generation changes only when
-- the lineage is invalidated, never on ordinary compaction).
--
-- synchro_reset_retention_lineage(scope_id) mints the scope's next retention
-- generation. Every cursor, rebuild token and seed receipt binds the
-- generation it was issued under, so all of them go stale at once: pull sends
-- the scope to rebuild, a rebuild session restarts, a receipt converts to a
-- null cursor. The floor and the retained effects stay as they are; cursors
-- of the new lineage come only from rebuilds finished after the reset.
-- Returns the new retention generation.

CREATE FUNCTION synchro.synchro_reset_retention_lineage(p_scope text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_generation bigint;
BEGIN
  IF p_scope IS NULL OR p_scope = '' THEN
    RAISE EXCEPTION 'give the scope whose retention lineage is reset' USING ERRCODE = '22023';
  END IF;
  -- A missing state row stands for generation 1, so a first reset writes 2.
  INSERT INTO synchro.scope_state (scope_id, retention_generation) VALUES (p_scope, 2)
  ON CONFLICT (scope_id) DO UPDATE SET retention_generation = synchro.scope_state.retention_generation + 1
  RETURNING retention_generation INTO v_generation;
  RETURN v_generation;
END
$$;

REVOKE EXECUTE ON FUNCTION synchro.synchro_reset_retention_lineage(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.synchro_reset_retention_lineage(text) TO synchro_operator;
