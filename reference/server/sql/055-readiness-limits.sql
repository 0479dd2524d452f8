-- Readiness limits are configured as text (synchro.capture_limits, like the
-- extension's settings). A limit counts only when it reads as a finite number
-- greater than zero; anything else (unset, empty, a word, a unit suffix, zero,
-- a negative, NaN, an infinity, a value beyond double precision) is NULL, and
-- the check it bounds reports invalid_limit, so the server is unready.
CREATE FUNCTION synchro.positive_limit(p_text text) RETURNS double precision
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, synchro AS $$
DECLARE
  v double precision;
BEGIN
  BEGIN
    v := btrim(p_text)::double precision;
  EXCEPTION WHEN invalid_text_representation OR numeric_value_out_of_range THEN
    RETURN NULL;
  END;
  IF v IS NULL OR v = 'NaN'::double precision OR v IN ('Infinity'::double precision, '-Infinity'::double precision) OR v <= 0 THEN
    RETURN NULL;
  END IF;
  RETURN v;
END
$$;
REVOKE EXECUTE ON FUNCTION synchro.positive_limit(text) FROM PUBLIC;

-- Forced check states, for certification only: a row sets a check of the
-- health detail to a state ("ok", "failed", "unknown") or, with a NULL state,
-- removes it, so a harness can show that readiness is the conjunction of the
-- required checks (decision 218). Only the schema owner writes it; with no
-- rows, as after install, the detail is exactly what the checks computed.
CREATE TABLE synchro.health_check_overrides (
  check_name text PRIMARY KEY,
  state text CHECK (state IN ('ok', 'failed', 'unknown'))
);
