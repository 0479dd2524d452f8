-- The capture worker reads a registered relation's row type when it turns a
-- decoded row image into the relation's columns (capture/materialize.ts,
-- capture/impact.ts: jsonb_populate_record over the relation's type). When
-- capture runs as the worker login (SYNC-OPS-002, 083), that lookup needs
-- USAGE on the relation's schema; the public schema gives it to everyone, any
-- other schema to no one. Registration already grants that schema to
-- synchro_owner from the caller's side (004); the two entry points now grant
-- it to synchro_worker as well, with the caller's rights (a security-definer
-- owner could not grant on a schema it does not own). USAGE lets the worker
-- name the schema's objects; it reads no source table through it.

-- The schema a registration bound, for the entry points below: they run with
-- the caller's rights, and an operator does not read synchro.relations.
CREATE FUNCTION synchro.registered_schema(p_table text) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
  SELECT physical_schema FROM synchro.relations WHERE table_id = p_table
$$;
REVOKE EXECUTE ON FUNCTION synchro.registered_schema(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION synchro.registered_schema(text) TO synchro_operator;

CREATE OR REPLACE FUNCTION synchro.synchro_register_table(
  relation text,
  membership_fn text DEFAULT NULL,
  composition text DEFAULT 'single_scope',
  pk_column text DEFAULT NULL,
  updated_at_col text DEFAULT NULL,
  deleted_at_col text DEFAULT NULL,
  push_policy text DEFAULT 'enabled',
  exclude_columns text[] DEFAULT NULL,
  sync_columns text[] DEFAULT NULL,
  max_scope_fanout integer DEFAULT 1000
) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_table text;
BEGIN
  v_table := synchro.registration_register('synced', $1, $2, $3, $4, $5, $6, $7, $8, $9, $10);
  EXECUTE format('GRANT USAGE ON SCHEMA %I TO synchro_worker', synchro.registered_schema(v_table));
  RETURN v_table;
END
$$;

CREATE OR REPLACE FUNCTION synchro.synchro_register_capture_dependency(p_relation text, p_key_column text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, synchro AS $$
DECLARE
  v_table text;
BEGIN
  -- Push disabled: a capture key may be database-generated, no client ever authors one.
  v_table := synchro.registration_register('capture_dependency', p_relation, NULL, 'single_scope', p_key_column,
    NULL, NULL, 'disabled', NULL, NULL, 1000);
  EXECUTE format('GRANT USAGE ON SCHEMA %I TO synchro_worker', synchro.registered_schema(v_table));
  RETURN (SELECT relation_id FROM synchro.relations WHERE table_id = v_table);
END
$$;
