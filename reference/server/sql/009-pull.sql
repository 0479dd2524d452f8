-- Pull and rebuild state: token keys, per-scope generations and floors,
-- acknowledged checkpoints, and staged rebuild sessions.

-- HMAC keys for the two token kinds. 'active' signs; 'verify_only' still verifies.
CREATE TABLE synchro.token_keys (
  key_id text PRIMARY KEY,
  purpose text NOT NULL CHECK (purpose IN ('incremental_cursor', 'rebuild_cursor')),
  secret bytea NOT NULL CHECK (octet_length(secret) >= 64),
  state text NOT NULL CHECK (state IN ('active', 'verify_only', 'retired')),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX token_keys_one_active ON synchro.token_keys (purpose) WHERE state = 'active';

-- Per-scope lineage. A missing row means generation 1 for both and a floor at generation_start.
CREATE TABLE synchro.scope_state (
  scope_id text PRIMARY KEY,
  membership_generation bigint NOT NULL DEFAULT 1 CHECK (membership_generation > 0),
  retention_generation bigint NOT NULL DEFAULT 1 CHECK (retention_generation > 0),
  floor_commit_lsn pg_lsn,
  floor_event_ordinal bigint,
  floor_effect_ordinal integer
);

-- The position a client last presented for a scope (acknowledgement lags one request).
CREATE TABLE synchro.checkpoints (
  user_id text NOT NULL,
  client_id text NOT NULL,
  scope_id text NOT NULL,
  stream_generation text NOT NULL,
  commit_lsn pg_lsn NOT NULL,
  event_ordinal bigint NOT NULL,
  effect_ordinal integer NOT NULL,
  acknowledged_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, client_id, scope_id)
);

-- One immutable staged snapshot per rebuild attempt.
CREATE TABLE synchro.rebuild_sessions (
  session_id uuid PRIMARY KEY,
  user_id text NOT NULL,
  client_id text NOT NULL,
  rebuild_id uuid NOT NULL,
  client_generation bigint NOT NULL,
  scope_id text NOT NULL,
  schema_hash text NOT NULL,
  membership_generation bigint NOT NULL,
  retention_generation bigint NOT NULL,
  stream_generation text NOT NULL,
  boundary_lsn pg_lsn,
  accepted_write_epoch bigint NOT NULL,
  page_limit integer NOT NULL CHECK (page_limit BETWEEN 1 AND 1000),
  row_count integer NOT NULL,
  snapshot_digest bytea NOT NULL CHECK (octet_length(snapshot_digest) = 32),
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  UNIQUE (user_id, client_id, rebuild_id)
);
CREATE TABLE synchro.rebuild_rows (
  session_id uuid NOT NULL REFERENCES synchro.rebuild_sessions ON DELETE CASCADE,
  ordinal integer NOT NULL,
  table_id text NOT NULL,
  pk_text text NOT NULL,
  row_wire jsonb NOT NULL,
  server_version text NOT NULL,
  PRIMARY KEY (session_id, ordinal)
);
-- Exact response bytes per page, so a replay is byte-identical.
CREATE TABLE synchro.rebuild_pages (
  session_id uuid NOT NULL REFERENCES synchro.rebuild_sessions ON DELETE CASCADE,
  start_ordinal integer NOT NULL,
  body text NOT NULL,
  PRIMARY KEY (session_id, start_ordinal)
);

-- The capture gate looks up the fences a client's mutations produced.
CREATE INDEX row_versions_mutation ON synchro.row_versions (mutation_id) WHERE mutation_id IS NOT NULL;

-- Scope-local compaction. The safe position of a scope is the smallest of:
-- the acknowledged checkpoint of every nonexpired client the scope is
-- assigned to; the boundary of every unexpired rebuild session of the scope
-- that is not complete yet (a rebuild pins the history its final cursor
-- needs); and, only when no nonexpired client is assigned the
-- scope at all, the scope's durable high-watermark (048). Effects at or below it
-- are deleted and the floor moves up to it in the same transaction, so a
-- failing floor update takes the deletion back with it. Assigned clients that
-- hold neither a checkpoint nor a session must rebuild anyway and do not hold
-- the floor back.
CREATE FUNCTION synchro.synchro_compact_scope(p_scope text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_gen text;
  v_floor record;
  v_deleted bigint;
BEGIN
  SELECT stream_generation INTO v_gen FROM synchro.wal_progress;
  IF v_gen IS NULL THEN
    RETURN 0;
  END IF;
  PERFORM 1 FROM synchro.scope_state WHERE scope_id = p_scope FOR UPDATE;
  SELECT l, e, f INTO v_floor FROM (
      SELECT k.commit_lsn AS l, k.event_ordinal AS e, k.effect_ordinal AS f
        FROM synchro.checkpoints k
        JOIN synchro.client_scopes cs ON cs.user_id = k.user_id AND cs.client_id = k.client_id AND cs.scope_id = k.scope_id AND cs.assigned
        JOIN synchro.clients c ON c.user_id = k.user_id AND c.client_id = k.client_id AND NOT c.expired
       WHERE k.scope_id = p_scope AND k.stream_generation = v_gen
      UNION ALL
      SELECT coalesce(s.boundary_lsn, '0/0'::pg_lsn), CASE WHEN s.boundary_lsn IS NULL THEN -1 ELSE 9223372036854775807 END,
             CASE WHEN s.boundary_lsn IS NULL THEN -1 ELSE 2147483647 END
        FROM synchro.rebuild_sessions s
       WHERE s.scope_id = p_scope AND s.stream_generation = v_gen AND s.expires_at > now()
         -- The session pins until the rebuild is complete: its final page was served and the
         -- client has since presented a cursor at or past the boundary. A cursor past the
         -- boundary that an incremental pull gave the client before the rebuild finished does
         -- not release the pin: the client resumes from the rebuild's final cursor.
         AND NOT (EXISTS (SELECT 1 FROM synchro.rebuild_pages p WHERE p.session_id = s.session_id AND p.start_ordinal + s.page_limit >= s.row_count)
         AND EXISTS (
           SELECT 1 FROM synchro.checkpoints k
            WHERE k.user_id = s.user_id AND k.client_id = s.client_id AND k.scope_id = s.scope_id
              AND k.stream_generation = s.stream_generation
              AND (k.commit_lsn, k.event_ordinal, k.effect_ordinal)
                  >= (coalesce(s.boundary_lsn, '0/0'::pg_lsn), CASE WHEN s.boundary_lsn IS NULL THEN -1 ELSE 9223372036854775807 END,
                      CASE WHEN s.boundary_lsn IS NULL THEN -1 ELSE 2147483647 END)))
      UNION ALL
      SELECT h.commit_lsn, h.event_ordinal, h.effect_ordinal
        FROM synchro.scope_high_watermarks h
       WHERE h.scope_id = p_scope AND h.stream_generation = v_gen
         AND NOT EXISTS (
           SELECT 1 FROM synchro.client_scopes cs
             JOIN synchro.clients c ON c.user_id = cs.user_id AND c.client_id = cs.client_id AND NOT c.expired
            WHERE cs.scope_id = p_scope AND cs.assigned)
    ) need ORDER BY l, e, f LIMIT 1;
  IF v_floor.l IS NULL OR v_floor.e < 0 THEN
    RETURN 0;
  END IF;
  DELETE FROM synchro.scope_effects
   WHERE scope_id = p_scope AND stream_generation = v_gen
     AND (commit_lsn, event_ordinal, effect_ordinal) <= (v_floor.l, v_floor.e, v_floor.f);
  GET DIAGNOSTICS v_deleted = ROW_COUNT;
  -- An ordinary floor advance keeps the retention generation: cursors at or above it stay valid.
  INSERT INTO synchro.scope_state (scope_id, floor_commit_lsn, floor_event_ordinal, floor_effect_ordinal)
  VALUES (p_scope, v_floor.l, CASE WHEN v_floor.e = 9223372036854775807 THEN NULL ELSE v_floor.e END,
          CASE WHEN v_floor.e = 9223372036854775807 THEN NULL ELSE v_floor.f END)
  ON CONFLICT (scope_id) DO UPDATE SET floor_commit_lsn = excluded.floor_commit_lsn,
    floor_event_ordinal = excluded.floor_event_ordinal, floor_effect_ordinal = excluded.floor_effect_ordinal
  WHERE (coalesce(synchro.scope_state.floor_commit_lsn, '0/0'), coalesce(synchro.scope_state.floor_event_ordinal, 9223372036854775807),
         coalesce(synchro.scope_state.floor_effect_ordinal, 2147483647))
      < (excluded.floor_commit_lsn, coalesce(excluded.floor_event_ordinal, 9223372036854775807), coalesce(excluded.floor_effect_ordinal, 2147483647));
  RETURN v_deleted;
END
$$;
REVOKE EXECUTE ON FUNCTION synchro.synchro_compact_scope(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.synchro_compact_scope(text) TO synchro_operator;
