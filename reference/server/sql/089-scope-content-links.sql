-- Scope content links (issue #21, decision 428).
--
-- A scope's content version (027) names one committed content of the scope.
-- Each statement that moves a scope's version now also records a link: the
-- version it moved from, the version it gave, and the row identities of the
-- scope it wrote. A reader holding the digest entries of version A and asked
-- for version B walks the links back from B; when the walk reaches A, the
-- identities on the way are every entry that may differ between A and B, and
-- only those are read again. When it does not reach A (a TRUNCATE, which
-- records no link; links pruned; a version moved by anything but this
-- trigger), the reader computes the whole scope as before, so a missing link
-- costs time and never exactness.

-- The version a scope had before its current one, read under the row lock the
-- move takes: writers of one scope are serialized there, so the versions of
-- a scope form one chain whatever order the sequence handed them out in.
ALTER TABLE synchro.scope_content_versions ADD COLUMN prior_version bigint;

CREATE TABLE synchro.scope_content_links (
  scope_id text NOT NULL,
  -- The version the statement gave the scope; unique, since the sequence is.
  version bigint NOT NULL,
  -- The version it moved from; 0 when the scope had none (its empty content).
  prior_version bigint NOT NULL,
  -- The scope's row identities (scope_rows.pk_bytes) the statement inserted,
  -- updated (before and after) or deleted.
  identities bytea[] NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (scope_id, version)
);
CREATE INDEX scope_content_links_age ON synchro.scope_content_links (scope_id, recorded_at);

-- Moves the version of every scope named in p_scopes (one entry per written
-- identity, in step with p_identities) and records each move's link. Links of
-- those scopes older than ten minutes go: a reader whose entries are older
-- than that computes the scope whole.
CREATE FUNCTION synchro.scope_content_move(p_scopes text[], p_identities bytea[]) RETURNS void
-- Called by the trigger function below, which runs as the schema's owner already.
LANGUAGE sql SET search_path = pg_catalog, synchro AS $$
  WITH written AS (
    SELECT w.scope_id, array_agg(DISTINCT w.identity) AS identities
      FROM unnest(p_scopes, p_identities) AS w(scope_id, identity) GROUP BY w.scope_id
  ), moved AS (
    INSERT INTO synchro.scope_content_versions AS v (scope_id, version)
    SELECT scope_id, nextval('synchro.scope_content_seq') FROM written
    ON CONFLICT (scope_id) DO UPDATE SET version = excluded.version, prior_version = v.version
    RETURNING v.scope_id, v.version, v.prior_version
  ), linked AS (
    INSERT INTO synchro.scope_content_links (scope_id, version, prior_version, identities)
    SELECT m.scope_id, m.version, coalesce(m.prior_version, 0), w.identities FROM moved m JOIN written w USING (scope_id)
    RETURNING scope_id
  )
  DELETE FROM synchro.scope_content_links l USING linked
   WHERE l.scope_id = linked.scope_id AND l.recorded_at < now() - interval '10 minutes';
$$;

CREATE OR REPLACE FUNCTION synchro.scope_content_touch() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    -- No link: every reader computes its scopes whole after a truncation.
    UPDATE synchro.scope_content_versions SET version = nextval('synchro.scope_content_seq'), prior_version = NULL;
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM synchro.scope_content_move(array_agg(scope_id), array_agg(pk_bytes)) FROM old_rows;
  ELSIF TG_OP = 'UPDATE' THEN
    -- Both sides: an update that moves a row to another scope or identity changes both.
    PERFORM synchro.scope_content_move(array_agg(scope_id), array_agg(pk_bytes))
       FROM (SELECT scope_id, pk_bytes FROM old_rows UNION ALL SELECT scope_id, pk_bytes FROM new_rows) r;
  ELSE
    PERFORM synchro.scope_content_move(array_agg(scope_id), array_agg(pk_bytes)) FROM new_rows;
  END IF;
  RETURN NULL;
END
$$;

DROP TRIGGER scope_rows_content_update ON synchro.scope_rows;
CREATE TRIGGER scope_rows_content_update AFTER UPDATE ON synchro.scope_rows
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION synchro.scope_content_touch();

REVOKE EXECUTE ON FUNCTION synchro.scope_content_move(text[], bytea[]) FROM PUBLIC;
