-- Server inspection of acknowledgement (SYNC-PULL-007): the checkpoint a
-- client holds for a scope, and the position an incremental cursor this
-- server issued names, in one comparable text form
-- "<stream_generation> <commit_lsn> <event_ordinal> <effect_ordinal>"
-- (generation_start and transaction_end as the checkpoint table stores them).
-- Only the harness's inspection reads these; the sync path never calls them.

-- The checkpoint of a client for a scope, or NULL when it has none.
CREATE FUNCTION synchro.synchro_inspect_checkpoint(p_client_id text, p_scope text) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT stream_generation || ' ' || commit_lsn::text || ' ' || event_ordinal::text || ' ' || effect_ordinal::text
    FROM synchro.checkpoints WHERE client_id = p_client_id AND scope_id = p_scope
$$;

-- The position inside an incremental cursor ("ic1.<base64url payload>.<mac>").
-- The MAC is not checked: inspection reads tokens this server handed out, and
-- a token it cannot read gives NULL.
CREATE FUNCTION synchro.synchro_inspect_cursor_position(p_token text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  encoded text := translate(split_part(p_token, '.', 2), '-_', '+/');
  payload jsonb;
  p jsonb;
BEGIN
  IF split_part(p_token, '.', 1) <> 'ic1' THEN RETURN NULL; END IF;
  payload := convert_from(decode(rpad(encoded, ((length(encoded) + 3) / 4) * 4, '='), 'base64'), 'UTF8')::jsonb;
  p := payload -> 'position';
  RETURN (payload ->> 'stream_generation') || ' ' || CASE p ->> 'position_kind'
    WHEN 'generation_start' THEN '0/0 -1 -1'
    WHEN 'effect' THEN (p ->> 'commit_lsn')::pg_lsn::text || ' ' || (p ->> 'event_ordinal') || ' ' || (p ->> 'effect_ordinal')
    WHEN 'transaction_end' THEN (p ->> 'commit_lsn')::pg_lsn::text || ' 9223372036854775807 2147483647'
  END;
EXCEPTION WHEN others THEN
  RETURN NULL;
END;
$$;

REVOKE EXECUTE ON FUNCTION synchro.synchro_inspect_checkpoint(text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION synchro.synchro_inspect_cursor_position(text) FROM PUBLIC;
