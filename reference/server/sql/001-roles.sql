-- The six group roles of the protocol. Roles are cluster-wide, so creating
-- them must succeed when another database of the cluster already did.
DO $$
DECLARE
  r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['synchro_owner', 'synchro_adapter', 'synchro_seed', 'synchro_monitor', 'synchro_operator', 'synchro_worker'] LOOP
    BEGIN
      IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
        EXECUTE format('CREATE ROLE %I NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS NOREPLICATION', r);
      END IF;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL; -- another database of the cluster created it concurrently
    END;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r
               AND (rolcanlogin OR rolsuper OR rolcreatedb OR rolcreaterole OR rolbypassrls OR rolreplication)) THEN
      EXECUTE format('ALTER ROLE %I NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS NOREPLICATION', r);
    END IF;
  END LOOP;
END
$$;
