-- Push-unit step 1: a push run inside a caller's transaction refuses to start
-- while that transaction has a pending deferred trigger event, because its
-- unit-end checks (SET CONSTRAINTS ALL IMMEDIATE) would fire the caller's
-- event as part of a push unit, as the push's role. The event must not fire.
--
-- Approximation (no extension): PostgreSQL offers no SQL view of the pending
-- after-trigger queue. Only a relation with a deferrable trigger can hold a
-- deferred event, and ALTER TABLE refuses (SQLSTATE 55006, "has pending
-- trigger events") on a relation that has one, without firing it. So each
-- such relation is probed with a no-op storage-parameter change inside a
-- subtransaction that is always rolled back: it takes SHARE UPDATE EXCLUSIVE
-- (writers are not blocked) only for the probe, and needs the relation
-- owner's rights, so the guard runs with the caller's rights.
CREATE FUNCTION synchro.synchro_push_guard() RETURNS void
LANGUAGE plpgsql SECURITY INVOKER AS $$
DECLARE
  v_rel regclass;
BEGIN
  FOR v_rel IN
    SELECT DISTINCT t.tgrelid::regclass FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
     WHERE t.tgdeferrable AND c.relkind = 'r'
  LOOP
    BEGIN
      EXECUTE format('ALTER TABLE ONLY %s SET (fillfactor = 100)', v_rel);
      RAISE EXCEPTION USING ERRCODE = 'P0004', MESSAGE = 'probe done';
    EXCEPTION
      WHEN object_in_use THEN
        IF SQLERRM LIKE '%pending trigger events%' THEN
          RAISE EXCEPTION 'synchro_push called with a pending deferred trigger event on %', v_rel USING ERRCODE = '25000';
        END IF;
      WHEN assert_failure THEN
        NULL;
    END;
  END LOOP;
END;
$$;
REVOKE ALL ON FUNCTION synchro.synchro_push_guard() FROM PUBLIC;
