-- Default deny, then per-signature grants. Runs as synchro_owner.
REVOKE ALL ON SCHEMA synchro FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA synchro FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA synchro FROM PUBLIC;
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA synchro FROM PUBLIC;
ALTER DEFAULT PRIVILEGES FOR ROLE synchro_owner IN SCHEMA synchro REVOKE ALL ON TABLES FROM PUBLIC;
ALTER DEFAULT PRIVILEGES FOR ROLE synchro_owner IN SCHEMA synchro REVOKE ALL ON SEQUENCES FROM PUBLIC;
ALTER DEFAULT PRIVILEGES FOR ROLE synchro_owner IN SCHEMA synchro REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
ALTER DEFAULT PRIVILEGES FOR ROLE synchro_owner IN SCHEMA synchro REVOKE USAGE ON TYPES FROM PUBLIC;

GRANT USAGE ON SCHEMA synchro TO synchro_adapter, synchro_seed, synchro_monitor, synchro_operator, synchro_worker;

GRANT EXECUTE ON FUNCTION synchro.synchro_readiness() TO synchro_adapter, synchro_monitor;
GRANT EXECUTE ON FUNCTION synchro.synchro_schema_manifest() TO synchro_adapter, synchro_seed;
GRANT EXECUTE ON FUNCTION synchro.synchro_tables() TO synchro_adapter;
GRANT EXECUTE ON FUNCTION synchro.synchro_health_detail() TO synchro_monitor, synchro_operator;

GRANT EXECUTE ON FUNCTION synchro.synchro_register_table(text, text, text, text, text, text, text, text[], text[], integer) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.registry_activate(jsonb, jsonb) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.registration_error(text, text) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.portable_type_of(oid) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_grant_user_scope(text, text) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_revoke_user_scope(text, text) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_register_shared_scope(text, boolean) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_unregister_shared_scope(text) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_register_assignment_function(text, integer) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_unregister_assignment_function() TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_retire_client(text, text) TO synchro_operator;
-- CREATE TRIGGER needs EXECUTE on the trigger function (firing does not).
GRANT EXECUTE ON FUNCTION synchro.synchro_primary_key_guard() TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_capture_fence() TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_capture_truncate_guard() TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.synchro_unregister_table(text) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.registry_deactivate(oid) TO synchro_operator;
GRANT EXECUTE ON FUNCTION synchro.fence_backfill(text, oid, text, text) TO synchro_operator;
