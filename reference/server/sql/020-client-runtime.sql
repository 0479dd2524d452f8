-- The minimum client runtime. At most one value; connect reads it on every
-- request, so a change applies to the next connect. A value outside the
-- Semantic Versioning 2.0.0 grammar is refused here, so a malformed minimum
-- can never be stored (the server still fails closed if one were found).

CREATE FUNCTION synchro.is_semver(p_version text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT SET search_path = pg_catalog, synchro AS $$
  -- The grammar of semver.org with explicit ASCII classes; "C" keeps ranges bytewise.
  SELECT (p_version COLLATE "C") ~ ('^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)'
    || '(-(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*)?'
    || '(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$')
$$;

CREATE TABLE synchro.client_runtime_policy (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  minimum_client_version text NOT NULL CHECK (synchro.is_semver(minimum_client_version)),
  set_at timestamptz NOT NULL DEFAULT now()
);

-- Sets (or, with NULL, clears) the minimum client version.
CREATE FUNCTION synchro.synchro_set_minimum_client_version(p_version text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
BEGIN
  IF p_version IS NULL THEN
    DELETE FROM synchro.client_runtime_policy;
    RETURN;
  END IF;
  IF NOT synchro.is_semver(p_version) THEN
    RAISE EXCEPTION 'the minimum client version must be a Semantic Versioning 2.0.0 version' USING ERRCODE = '22023';
  END IF;
  INSERT INTO synchro.client_runtime_policy (minimum_client_version) VALUES (p_version)
    ON CONFLICT (singleton) DO UPDATE SET minimum_client_version = excluded.minimum_client_version, set_at = now();
END
$$;

REVOKE EXECUTE ON FUNCTION synchro.is_semver(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.synchro_set_minimum_client_version(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.synchro_set_minimum_client_version(text) TO synchro_operator;
