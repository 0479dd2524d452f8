-- The canonical runtime entry points of the adapter (SYNC-BOUND-001; the 005
-- sheet's grant map): synchro_connect, synchro_push, synchro_pull and
-- synchro_rebuild, each (text, jsonb) -> jsonb and executable by
-- synchro_adapter only. The HTTP layer calls the endpoint's entry point exactly
-- once per request it hands to the core, as synchro_adapter, and answers with
-- the status and body of the result: {"status": <HTTP status>, "body": <the
-- exact response text>}.
--
-- Where the reference approximates the rule (decision 360): its core runs in
-- TypeScript in the HTTP process (decision 1), not inside this function. The
-- core does the request's semantic work (scope, conflict, rebuild and write
-- decisions) in the request's own transaction and then calls the entry point
-- as the last statement before COMMIT, passing the outcome it reached as the
-- second argument, where an extension built in-process would receive the
-- request itself. What the entry point does own:
--   * the request's transaction commits only through a successful call, so
--     without EXECUTE on it the endpoint answers an error and nothing the
--     core did persists;
--   * the canonical result the adapter must send, status and bytes;
--   * a record of every call (which entry point, the caller's active role, the
--     result's status, error code and SHA-256 of its body), which the
--     conformance harness reads to count calls per request.

-- The call record. UNLOGGED: it is an observation of calls, not sync state
-- (a crash empties it, and nothing reads it to decide anything), so writing
-- it costs no WAL. Calls are numbered by a sequence; every 1024th call deletes
-- the window of 1024 calls before the previous one, so the table holds between
-- 1024 and 2048 recent calls. The windows do not overlap, so two pruning calls
-- never delete the same rows (no lock wait, no serialization failure in a
-- repeatable-read pull); a call whose transaction commits after its window was
-- pruned is left behind, which only ever leaves a few extra rows.
CREATE UNLOGGED SEQUENCE synchro.adapter_entry_call_ids;

CREATE UNLOGGED TABLE synchro.adapter_entry_calls (
  call_id bigint PRIMARY KEY,
  entry_point text NOT NULL CHECK (entry_point IN ('connect', 'push', 'pull', 'rebuild')),
  caller_role text NOT NULL,
  status integer NOT NULL,
  error_code text,
  body_sha256 bytea NOT NULL,
  called_at timestamptz NOT NULL
);

-- The body of the four entry points (not granted to any runtime role).
CREATE FUNCTION synchro.adapter_entry_result(p_entry_point text, p_user_id text, p_outcome jsonb) RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_status integer;
  v_body text;
  v_code text;
  v_call bigint;
BEGIN
  IF p_user_id IS NULL OR p_user_id = '' THEN
    RAISE EXCEPTION 'the % entry point needs the authenticated user id', p_entry_point USING ERRCODE = '22023';
  END IF;
  IF jsonb_typeof(p_outcome -> 'status') IS DISTINCT FROM 'number' OR jsonb_typeof(p_outcome -> 'body') IS DISTINCT FROM 'string' THEN
    RAISE EXCEPTION 'the % entry point needs an outcome {"status": number, "body": string}', p_entry_point USING ERRCODE = '22023';
  END IF;
  v_status := (p_outcome ->> 'status')::integer;
  v_body := p_outcome ->> 'body';
  IF v_status <> 200 THEN
    -- Every refusal is the protocol's error envelope; its code decides the HTTP status.
    IF v_status NOT BETWEEN 400 AND 599 THEN
      RAISE EXCEPTION 'the % entry point got status %, neither a success nor an error', p_entry_point, v_status USING ERRCODE = '22023';
    END IF;
    -- An envelope may echo a \u0000 escape from the request, which PostgreSQL's JSON
    -- cannot turn into text; swapping it for another six-character escape keeps the
    -- text valid JSON (even after an escaped backslash) and leaves the code alone.
    v_code := (replace(v_body, '\u0000', '\u0020')::json) #>> '{error,code}';
    IF v_code IS NULL THEN
      RAISE EXCEPTION 'the % entry point got an error outcome without an error code', p_entry_point USING ERRCODE = '22023';
    END IF;
  END IF;
  v_call := nextval('synchro.adapter_entry_call_ids');
  IF v_call % 1024 = 0 THEN
    DELETE FROM synchro.adapter_entry_calls WHERE call_id > v_call - 2048 AND call_id <= v_call - 1024;
  END IF;
  -- The caller's active role: SECURITY DEFINER changes current_user, not the role the session set.
  INSERT INTO synchro.adapter_entry_calls (call_id, entry_point, caller_role, status, error_code, body_sha256, called_at)
  VALUES (v_call, p_entry_point, coalesce(nullif(current_setting('role'), 'none'), session_user::text), v_status, v_code,
          sha256(convert_to(v_body, 'UTF8')), clock_timestamp());
  RETURN jsonb_build_object('status', v_status, 'body', v_body);
END
$$;

CREATE FUNCTION synchro.synchro_connect(p_user_id text, p_outcome jsonb) RETURNS jsonb
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, synchro
RETURN synchro.adapter_entry_result('connect', p_user_id, p_outcome);

CREATE FUNCTION synchro.synchro_push(p_user_id text, p_outcome jsonb) RETURNS jsonb
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, synchro
RETURN synchro.adapter_entry_result('push', p_user_id, p_outcome);

CREATE FUNCTION synchro.synchro_pull(p_user_id text, p_outcome jsonb) RETURNS jsonb
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, synchro
RETURN synchro.adapter_entry_result('pull', p_user_id, p_outcome);

CREATE FUNCTION synchro.synchro_rebuild(p_user_id text, p_outcome jsonb) RETURNS jsonb
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, synchro
RETURN synchro.adapter_entry_result('rebuild', p_user_id, p_outcome);

REVOKE EXECUTE ON FUNCTION synchro.adapter_entry_result(text, text, jsonb) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.synchro_connect(text, jsonb), synchro.synchro_push(text, jsonb), synchro.synchro_pull(text, jsonb), synchro.synchro_rebuild(text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.synchro_connect(text, jsonb), synchro.synchro_push(text, jsonb), synchro.synchro_pull(text, jsonb), synchro.synchro_rebuild(text, jsonb) TO synchro_adapter;

COMMENT ON FUNCTION synchro.synchro_connect(text, jsonb) IS 'Canonical connect entry point: the adapter calls it once per connect request as synchro_adapter and answers its {"status","body"} result';
COMMENT ON FUNCTION synchro.synchro_push(text, jsonb) IS 'Canonical push entry point: the adapter calls it once per push request as synchro_adapter and answers its {"status","body"} result';
COMMENT ON FUNCTION synchro.synchro_pull(text, jsonb) IS 'Canonical pull entry point: the adapter calls it once per pull request as synchro_adapter and answers its {"status","body"} result';
COMMENT ON FUNCTION synchro.synchro_rebuild(text, jsonb) IS 'Canonical rebuild entry point: the adapter calls it once per rebuild request as synchro_adapter and answers its {"status","body"} result';
