/**
 * Fault switches in the installed SQL. The registration of the scope
 * assignment function is PL/pgSQL (sql/005-scopes.sql), so a switch that
 * breaks one of its clauses rewrites that clause of the installed function
 * when the server starts (db/install.ts, amendInstalledSql). Each line names
 * the clause it changes; with no switch on nothing runs.
 */
import { fault } from './core/faults.ts';
import { amendInstalledSql, type SqlAmendment } from './db/install.ts';

/** The PL/pgSQL checks and write behind the entry point. */
const REGISTER = 'synchro.assignment_function_register(text, integer)';
/** The operator's entry point: a SQL wrapper with the default bound that returns NULL for a NULL name. */
const ENTRY = 'synchro.synchro_register_assignment_function(text, integer)';

export async function applySqlFaults(databaseUrl: string): Promise<void> {
  const amendments: SqlAmendment[] = [];
  if (fault('assignment-language-unchecked')) amendments.push({ fn: REGISTER, from: "v_p.prolang <> (SELECT oid FROM pg_language WHERE lanname = 'sql') OR v_p.prosqlbody IS NULL", to: 'false' }); // fault: server:assignment-language-unchecked
  if (fault('assignment-default-bound-100')) amendments.push({ fn: ENTRY, from: 'DEFAULT 1000', to: 'DEFAULT 100' }); // fault: server:assignment-default-bound-100
  if (fault('assignment-registration-for-adapter')) amendments.push({ statement: 'GRANT EXECUTE ON FUNCTION synchro.synchro_register_assignment_function(text, integer), synchro.synchro_unregister_assignment_function() TO synchro_adapter' }); // fault: server:assignment-registration-for-adapter
  if (fault('assignment-null-name-unregisters')) amendments.push({ fn: ENTRY, from: 'THEN NULL::void', to: 'THEN synchro.synchro_unregister_assignment_function()' }); // fault: server:assignment-null-name-unregisters
  if (fault('assignment-bound-below-one-unbounded')) amendments.push({ fn: ENTRY, from: 'assignment_function_register(p_function, p_max_scopes)', to: 'assignment_function_register(p_function, CASE WHEN p_max_scopes < 1 THEN NULL ELSE p_max_scopes END)' }); // fault: server:assignment-bound-below-one-unbounded
  if (fault('unbounded-assignment-trusted')) amendments.push({ fn: REGISTER, from: "IF v_p.provolatile <> 's' OR v_p.prosecdef THEN", to: "IF p_max_scopes IS NOT NULL AND (v_p.provolatile <> 's' OR v_p.prosecdef) THEN" }); // fault: server:unbounded-assignment-trusted
  if (amendments.length > 0) await amendInstalledSql(databaseUrl, amendments);
}
