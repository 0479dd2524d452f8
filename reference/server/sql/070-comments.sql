-- Operator-facing descriptions of the schemas and the entry points operators
-- and monitors call (SYNC-OPS-007 compares them between a clean install and
-- an updated one, like every other property of the extension's objects).
COMMENT ON SCHEMA synchro IS 'Synchro protocol 3: registry, capture, scopes and the SQL entry points';
COMMENT ON SCHEMA synchro_projection IS 'Synchro protocol 3: projections of registered relations';
COMMENT ON FUNCTION synchro.synchro_readiness() IS 'Whether the server is ready to serve sync traffic ({"ready": boolean}); callable by synchro_adapter and synchro_monitor';
COMMENT ON FUNCTION synchro.synchro_health_detail() IS 'Readiness with the condition behind it; callable by synchro_monitor and synchro_operator';
COMMENT ON FUNCTION synchro.synchro_register_table(text, text, text, text, text, text, text, text[], text[], integer) IS 'Registers a source relation for sync with its membership function';
COMMENT ON FUNCTION synchro.synchro_unregister_table(text) IS 'Removes a relation from sync';
