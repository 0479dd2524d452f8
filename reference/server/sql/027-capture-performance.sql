-- What keeps capture linear and steady pulls constant (issue #21, docs/decisions.md).

-- Projections get an index on the registered key. The worker replaces a
-- projected row by its key, and membership functions look rows up by key:
-- without it every captured row scanned the whole projection.
CREATE OR REPLACE FUNCTION synchro.projection_create(p_table text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_rel record;
  v_projection regclass;
  v_key int2;
BEGIN
  SELECT physical_relation_oid, pk_column INTO v_rel FROM synchro.relations WHERE table_id = p_table;
  PERFORM synchro.projection_ensure(v_rel.physical_relation_oid);
  SELECT projection_oid::regclass INTO v_projection FROM synchro.projection_views WHERE relation_oid = v_rel.physical_relation_oid;
  SELECT attnum INTO v_key FROM pg_attribute WHERE attrelid = v_projection AND attname = v_rel.pk_column AND NOT attisdropped;
  -- Not unique: the worker keeps one row per key by replacing it, and a failure stays what it was.
  IF v_key IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = v_projection AND i.indkey[0] = v_key) THEN
    EXECUTE format('CREATE INDEX ON %s (%I)', v_projection, v_rel.pk_column);
  END IF;
END
$$;

-- Row digests stored beside the wire rows. The worker computes each one once,
-- under the schema hash and table shape named by digest_tag; a reader uses a
-- stored digest only when the tag is the one it would compute with, and
-- computes the digest itself otherwise. A write that changes the row or its
-- version without giving a new digest drops the stored one.
ALTER TABLE synchro.scope_rows ADD COLUMN row_digest bytea, ADD COLUMN digest_tag text;
ALTER TABLE synchro.scope_effects ADD COLUMN row_digest bytea, ADD COLUMN digest_tag text;

-- A scope digest reads (key, digest) in identity order: this index gives them
-- in that order, from the index alone once the pages are all-visible.
CREATE INDEX scope_rows_digest_order ON synchro.scope_rows (scope_id, pk_bytes) INCLUDE (table_id, row_digest, digest_tag);

CREATE FUNCTION synchro.stored_digest_guard() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
BEGIN
  IF (NEW.row_wire IS DISTINCT FROM OLD.row_wire OR NEW.server_version IS DISTINCT FROM OLD.server_version)
     AND NEW.row_digest IS NOT DISTINCT FROM OLD.row_digest THEN
    NEW.row_digest := NULL;
    NEW.digest_tag := NULL;
  END IF;
  RETURN NEW;
END
$$;
REVOKE EXECUTE ON FUNCTION synchro.stored_digest_guard() FROM PUBLIC;
CREATE TRIGGER scope_rows_stored_digest BEFORE UPDATE ON synchro.scope_rows
  FOR EACH ROW EXECUTE FUNCTION synchro.stored_digest_guard();
CREATE TRIGGER scope_effects_stored_digest BEFORE UPDATE ON synchro.scope_effects
  FOR EACH ROW EXECUTE FUNCTION synchro.stored_digest_guard();

-- Content versions: every statement that changes a scope's rows gives the
-- scope a new version drawn from a sequence, so a version names exactly one
-- committed content of the scope. Scope checksums are cached by scope and
-- version (core/checksums.ts); any writer, present or future, moves it.
CREATE SEQUENCE synchro.scope_content_seq;
CREATE TABLE synchro.scope_content_versions (
  scope_id text PRIMARY KEY,
  version bigint NOT NULL
);

CREATE FUNCTION synchro.scope_content_touch() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE synchro.scope_content_versions SET version = nextval('synchro.scope_content_seq');
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO synchro.scope_content_versions (scope_id, version)
      SELECT scope_id, nextval('synchro.scope_content_seq') FROM (SELECT DISTINCT scope_id FROM old_rows) s
    ON CONFLICT (scope_id) DO UPDATE SET version = excluded.version;
  ELSE
    INSERT INTO synchro.scope_content_versions (scope_id, version)
      SELECT scope_id, nextval('synchro.scope_content_seq') FROM (SELECT DISTINCT scope_id FROM new_rows) s
    ON CONFLICT (scope_id) DO UPDATE SET version = excluded.version;
  END IF;
  RETURN NULL;
END
$$;
-- Triggers fire without EXECUTE; nobody calls these directly.
REVOKE EXECUTE ON FUNCTION synchro.scope_content_touch() FROM PUBLIC;
CREATE TRIGGER scope_rows_content_insert AFTER INSERT ON synchro.scope_rows
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION synchro.scope_content_touch();
CREATE TRIGGER scope_rows_content_update AFTER UPDATE ON synchro.scope_rows
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION synchro.scope_content_touch();
CREATE TRIGGER scope_rows_content_delete AFTER DELETE ON synchro.scope_rows
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION synchro.scope_content_touch();
CREATE TRIGGER scope_rows_content_truncate AFTER TRUNCATE ON synchro.scope_rows
  FOR EACH STATEMENT EXECUTE FUNCTION synchro.scope_content_touch();

-- A pull page keeps the latest effect of each key in its window. The worker
-- marks an effect superseded in the transaction that writes a later effect
-- of the same key in the same scope, so in any snapshot an effect is the
-- latest of its key exactly when it is not marked, and a page is one range
-- scan of the position index. Each key has at most one unmarked effect per
-- scope and generation; the unique index holds the worker to that and is
-- how it finds the effect to mark.
ALTER TABLE synchro.scope_effects ADD COLUMN superseded boolean NOT NULL DEFAULT false;
CREATE UNIQUE INDEX scope_effects_latest ON synchro.scope_effects (scope_id, stream_generation, table_id, pk_bytes) WHERE NOT superseded;
