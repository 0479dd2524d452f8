-- Default deny, completed (SYNC-OPS-001, decision 203). Runs last, as synchro_owner.
--
-- 007 revokes PUBLIC's default privileges with IN SCHEMA synchro, but a
-- per-schema default can only add to the global defaults, never take away:
-- PostgreSQL still gave PUBLIC EXECUTE on every new function and USAGE on every
-- new type synchro_owner created. The owner's global defaults are closed here,
-- so an object added later (an upgrade, an operator's projection) starts closed.
ALTER DEFAULT PRIVILEGES FOR ROLE synchro_owner REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
ALTER DEFAULT PRIVILEGES FOR ROLE synchro_owner REVOKE USAGE ON TYPES FROM PUBLIC;

-- Every type already in the schema (the row types of its tables and views
-- included; an array type follows its element type) loses PUBLIC USAGE.
DO $$
DECLARE
  t regtype;
BEGIN
  FOR t IN
    SELECT ty.oid::regtype FROM pg_type ty
    WHERE ty.typnamespace = 'synchro'::regnamespace AND ty.typcategory <> 'A'
  LOOP
    EXECUTE format('REVOKE USAGE ON TYPE %s FROM PUBLIC', t);
  END LOOP;
END
$$;

-- The worker role gets table privileges only, never a function (005 sheet):
-- nothing of the reference calls the name lookup as synchro_worker.
REVOKE EXECUTE ON FUNCTION synchro.function_by_name(text, oid[]) FROM synchro_worker;

-- Every function resolves names through pg_catalog and synchro only (005
-- sheet). A function that already lists pg_temp after them keeps it: pg_temp
-- last is stricter than the implicit pg_temp first.
DO $$
DECLARE
  f regprocedure;
BEGIN
  FOR f IN
    SELECT p.oid::regprocedure FROM pg_proc p
    WHERE p.pronamespace = 'synchro'::regnamespace
      AND NOT coalesce(p.proconfig && ARRAY['search_path=pg_catalog, synchro', 'search_path=pg_catalog, synchro, pg_temp'], false)
  LOOP
    EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, synchro', f);
  END LOOP;
END
$$;

-- Functions the files between 007 and this one created were given to PUBLIC
-- by the defaults this file only now closes (a trigger function such as
-- 048's included): none keeps it.
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA synchro FROM PUBLIC;
