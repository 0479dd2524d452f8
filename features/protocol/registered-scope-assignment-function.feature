@SYNC-PROTO-008 @server @internal
Feature: Registered Scope Assignment Function
  An assignment function lets an operator derive a user's scopes from data the
  application already keeps (team or project membership) instead of granting
  each scope by hand. Because its output decides what a user may read, it is
  fenced in: one function at most, registered only by synchro_operator through
  synchro.synchro_register_assignment_function(text, integer) returning void
  with a default bound of 1000, checked against a fixed list of restrictions
  at registration, and re-checked against its stored definition hash on every
  connect and pull. Each evaluation either yields a complete, valid result or
  fails the whole request with 500 sync_integrity_failure and leaves the
  assignment untouched. A failure is never read as "no scopes", a result over
  the bound is never cut short, and an edited function is never run. SQL NULL
  as the bound lifts only the count limit; SQL NULL as the function name is a
  no-op that returns NULL.

  The harness creates candidate functions and runs registration SQL as a login
  in synchro_operator ("app_operator") or in synchro_adapter only
  ("app_adapter"), then observes the effect through connect and pull of fresh
  and continuing clients. A registration that must change nothing is shown to
  have changed nothing by the previous function still deciding the scopes.
  In the function bodies below, {synchro_relation} stands for the qualified
  name of any relation in schema synchro, chosen by the harness at run time.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And login role "app_operator" is a member of "synchro_operator" only
    And login role "app_adapter" is a member of "synchro_adapter" only
    And login role "app_other" is a member of no synchro role and may create functions in schema "public"
    And table "restricted.hidden_members" (user_id text, team_id text) exists and role "app_operator" may use schema "restricted" but has no privilege on that table
    And role "app_operator" has run on the source database:
      """
      CREATE TABLE public.team_members (user_id text NOT NULL, team_id text NOT NULL, PRIMARY KEY (user_id, team_id));
      INSERT INTO public.team_members VALUES ('alice', 't_7'), ('alice', 't_8'), ('bob', 't_9');
      CREATE FUNCTION public.team_scopes(p_user_id text) RETURNS SETOF text LANGUAGE sql STABLE
        SET search_path = pg_catalog, synchro
        BEGIN ATOMIC
          SELECT 'team:' || m.team_id FROM public.team_members AS m WHERE m.user_id = p_user_id;
        END;
      REVOKE ALL ON FUNCTION public.team_scopes(text) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION public.team_scopes(text) TO synchro_owner;
      SELECT synchro.synchro_register_assignment_function('public.team_scopes', 100);
      """

  @cap:provision @cap:sourceSql @cap:scopes
  Rule: at most one registered assignment function contributes scopes

    Scenario: a second registration replaces the first
      Given role "app_operator" has run on the source database:
        """
        CREATE TABLE public.project_members (user_id text NOT NULL, project_id text NOT NULL);
        INSERT INTO public.project_members VALUES ('alice', 'p1');
        CREATE FUNCTION public.project_scopes(p_user_id text) RETURNS SETOF text LANGUAGE sql STABLE
          SET search_path = pg_catalog, synchro
          BEGIN ATOMIC
            SELECT 'project:' || m.project_id FROM public.project_members AS m WHERE m.user_id = p_user_id;
          END;
        REVOKE ALL ON FUNCTION public.project_scopes(text) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION public.project_scopes(text) TO synchro_owner;
        """
      And client "A" of user "alice" has connected and rebuilt every assigned scope
      When role "app_operator" runs on the source database:
        """
        SELECT synchro.synchro_register_assignment_function('public.project_scopes', 100);
        """
      And client "A" pulls
      Then the response member "/scope_updates/add" equals [{"id":"project:p1","cursor":null}]
      And the response member "/scope_updates/remove" equals ["team:t_7","team:t_8"]
      When client "B" of user "alice" connects as a fresh client
      Then the scopes added in the response are exactly "project:p1" and "user:alice"

    Scenario: unregistering leaves only the other sources
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      When role "app_operator" runs on the source database:
        """
        SELECT synchro.synchro_unregister_assignment_function();
        """
      And client "A" pulls
      Then the response member "/scope_updates/remove" equals ["team:t_7","team:t_8"]
      And the response member "/scope_updates/add" equals []

  @cap:provision @cap:sourceSql @cap:scopes
  Rule: registration rejects a function that breaks a rule of scope assignment

    @negative
    Scenario Outline: a candidate breaking one restriction is refused and the previous registration stays
      Given role "<owner>" has run on the source database:
        """
        <definition>
        <privileges>
        """
      When role "app_operator" runs on the source database:
        """
        SELECT synchro.synchro_register_assignment_function('public.candidate_scopes', 100);
        """
      Then the SQL statement fails
      And when client "B" of user "alice" connects as a fresh client, the scopes added are exactly "team:t_7", "team:t_8" and "user:alice"

      Examples: restrictions on language, signature and volatility
        | case                   | owner        | definition | privileges |
        | PL/pgSQL body          | app_operator | CREATE FUNCTION public.candidate_scopes(p text) RETURNS SETOF text LANGUAGE plpgsql STABLE SET search_path = pg_catalog, synchro AS $f$ BEGIN RETURN NEXT 'team:x'; END $f$; | REVOKE ALL ON FUNCTION public.candidate_scopes(text) FROM PUBLIC; GRANT EXECUTE ON FUNCTION public.candidate_scopes(text) TO synchro_owner; |
        | SQL string body        | app_operator | CREATE FUNCTION public.candidate_scopes(p text) RETURNS SETOF text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro AS $f$ SELECT 'team:x' $f$; | REVOKE ALL ON FUNCTION public.candidate_scopes(text) FROM PUBLIC; GRANT EXECUTE ON FUNCTION public.candidate_scopes(text) TO synchro_owner; |
        | two arguments          | app_operator | CREATE FUNCTION public.candidate_scopes(p text, q text) RETURNS SETOF text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro BEGIN ATOMIC SELECT 'team:x'; END; | REVOKE ALL ON FUNCTION public.candidate_scopes(text, text) FROM PUBLIC; GRANT EXECUTE ON FUNCTION public.candidate_scopes(text, text) TO synchro_owner; |
        | varchar argument       | app_operator | CREATE FUNCTION public.candidate_scopes(p varchar) RETURNS SETOF text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro BEGIN ATOMIC SELECT 'team:x'; END; | REVOKE ALL ON FUNCTION public.candidate_scopes(varchar) FROM PUBLIC; GRANT EXECUTE ON FUNCTION public.candidate_scopes(varchar) TO synchro_owner; |
        | argument default       | app_operator | CREATE FUNCTION public.candidate_scopes(p text DEFAULT 'alice') RETURNS SETOF text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro BEGIN ATOMIC SELECT 'team:x'; END; | REVOKE ALL ON FUNCTION public.candidate_scopes(text) FROM PUBLIC; GRANT EXECUTE ON FUNCTION public.candidate_scopes(text) TO synchro_owner; |
        | variadic argument      | app_operator | CREATE FUNCTION public.candidate_scopes(VARIADIC p text[]) RETURNS SETOF text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro BEGIN ATOMIC SELECT 'team:x'; END; | REVOKE ALL ON FUNCTION public.candidate_scopes(text[]) FROM PUBLIC; GRANT EXECUTE ON FUNCTION public.candidate_scopes(text[]) TO synchro_owner; |
        | returns one text       | app_operator | CREATE FUNCTION public.candidate_scopes(p text) RETURNS text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro BEGIN ATOMIC SELECT 'team:x'; END; | REVOKE ALL ON FUNCTION public.candidate_scopes(text) FROM PUBLIC; GRANT EXECUTE ON FUNCTION public.candidate_scopes(text) TO synchro_owner; |
        | volatile               | app_operator | CREATE FUNCTION public.candidate_scopes(p text) RETURNS SETOF text LANGUAGE sql VOLATILE SET search_path = pg_catalog, synchro BEGIN ATOMIC SELECT 'team:x'; END; | REVOKE ALL ON FUNCTION public.candidate_scopes(text) FROM PUBLIC; GRANT EXECUTE ON FUNCTION public.candidate_scopes(text) TO synchro_owner; |
        | security definer       | app_operator | CREATE FUNCTION public.candidate_scopes(p text) RETURNS SETOF text LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, synchro BEGIN ATOMIC SELECT 'team:x'; END; | REVOKE ALL ON FUNCTION public.candidate_scopes(text) FROM PUBLIC; GRANT EXECUTE ON FUNCTION public.candidate_scopes(text) TO synchro_owner; |

      Examples: restrictions on search path, ownership, privileges and dependencies
        | case                    | owner        | definition | privileges |
        | wrong search_path       | app_operator | CREATE FUNCTION public.candidate_scopes(p text) RETURNS SETOF text LANGUAGE sql STABLE SET search_path = public, pg_catalog BEGIN ATOMIC SELECT 'team:x'; END; | REVOKE ALL ON FUNCTION public.candidate_scopes(text) FROM PUBLIC; GRANT EXECUTE ON FUNCTION public.candidate_scopes(text) TO synchro_owner; |
        | no search_path          | app_operator | CREATE FUNCTION public.candidate_scopes(p text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'team:x'; END; | REVOKE ALL ON FUNCTION public.candidate_scopes(text) FROM PUBLIC; GRANT EXECUTE ON FUNCTION public.candidate_scopes(text) TO synchro_owner; |
        | foreign owner           | app_other    | CREATE FUNCTION public.candidate_scopes(p text) RETURNS SETOF text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro BEGIN ATOMIC SELECT 'team:x'; END; | REVOKE ALL ON FUNCTION public.candidate_scopes(text) FROM PUBLIC; GRANT EXECUTE ON FUNCTION public.candidate_scopes(text) TO synchro_owner; |
        | synchro_owner lacks EXECUTE | app_operator | CREATE FUNCTION public.candidate_scopes(p text) RETURNS SETOF text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro BEGIN ATOMIC SELECT 'team:x'; END; | REVOKE ALL ON FUNCTION public.candidate_scopes(text) FROM PUBLIC; |
        | PUBLIC has EXECUTE      | app_operator | CREATE FUNCTION public.candidate_scopes(p text) RETURNS SETOF text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro BEGIN ATOMIC SELECT 'team:x'; END; | GRANT EXECUTE ON FUNCTION public.candidate_scopes(text) TO synchro_owner; |
        | calls a public function | app_operator | CREATE FUNCTION public.team_prefix(t text) RETURNS text LANGUAGE sql IMMUTABLE BEGIN ATOMIC SELECT 'team:' \|\| t; END; CREATE FUNCTION public.candidate_scopes(p text) RETURNS SETOF text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro BEGIN ATOMIC SELECT public.team_prefix(m.team_id) FROM public.team_members AS m WHERE m.user_id = p; END; | REVOKE ALL ON FUNCTION public.candidate_scopes(text) FROM PUBLIC; GRANT EXECUTE ON FUNCTION public.candidate_scopes(text) TO synchro_owner; |
        | reads schema synchro    | app_operator | CREATE FUNCTION public.candidate_scopes(p text) RETURNS SETOF text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro BEGIN ATOMIC SELECT 'team:x' FROM {synchro_relation} LIMIT 1; END; | REVOKE ALL ON FUNCTION public.candidate_scopes(text) FROM PUBLIC; GRANT EXECUTE ON FUNCTION public.candidate_scopes(text) TO synchro_owner; |
        | owner lacks SELECT      | app_operator | CREATE FUNCTION public.candidate_scopes(p text) RETURNS SETOF text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro BEGIN ATOMIC SELECT 'team:' \|\| h.team_id FROM restricted.hidden_members AS h WHERE h.user_id = p; END; | REVOKE ALL ON FUNCTION public.candidate_scopes(text) FROM PUBLIC; GRANT EXECUTE ON FUNCTION public.candidate_scopes(text) TO synchro_owner; |

  @cap:provision @cap:sourceSql @cap:scopes
  Rule: the registration function keeps its (text, integer) identity, default bound of 1000 and void result

    Scenario: the catalog shows the fixed signature
      When the harness reads the catalog entry of "synchro.synchro_register_assignment_function"
      Then it has exactly one overload, with argument types "text, integer"
      And its result type is "void"
      And the default of its second argument is 1000

    Scenario Outline: registering without a bound applies the bound 1000
      Given role "app_operator" has run on the source database:
        """
        CREATE FUNCTION public.bulk_scopes(p text) RETURNS SETOF text LANGUAGE sql STABLE
          SET search_path = pg_catalog, synchro
          BEGIN ATOMIC
            SELECT 'bulk:' || g::text FROM pg_catalog.generate_series(1, <count>) AS g WHERE p IS NOT NULL;
          END;
        REVOKE ALL ON FUNCTION public.bulk_scopes(text) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION public.bulk_scopes(text) TO synchro_owner;
        SELECT synchro.synchro_register_assignment_function('public.bulk_scopes');
        """
      When client "B" of user "alice" connects as a fresh client
      Then the response status is <status>

      Examples:
        | count | status |
        | 1000  | 200    |
        | 1001  | 500    |

  @cap:provision @cap:sourceSql @cap:scopes
  Rule: registration and removal require synchro_operator permission

    @negative
    Scenario Outline: a login without synchro_operator can neither register nor remove
      Given role "app_adapter" owns a valid assignment function "public.adapter_scopes" that returns "team:x"
      When role "app_adapter" runs on the source database:
        """
        <statement>
        """
      Then the SQL statement fails with SQLSTATE "42501"
      And when client "B" of user "alice" connects as a fresh client, the scopes added are exactly "team:t_7", "team:t_8" and "user:alice"

      Examples:
        | statement                                                                        |
        | SELECT synchro.synchro_register_assignment_function('public.adapter_scopes', 10); |
        | SELECT synchro.synchro_register_assignment_function('public.adapter_scopes', NULL); |
        | SELECT synchro.synchro_unregister_assignment_function();                          |

  @cap:provision @cap:sourceSql @cap:scopes
  Rule: a NULL function name returns SQL NULL and changes no registration, whatever the bound

    Scenario Outline: a NULL name is a no-op
      When role "app_operator" runs on the source database:
        """
        SELECT synchro.synchro_register_assignment_function(<arguments>) IS NULL AS returned_null;
        """
      Then the SQL statement returns one row with "returned_null" true
      And when client "B" of user "alice" connects as a fresh client, the scopes added are exactly "team:t_7", "team:t_8" and "user:alice"

      Examples:
        | arguments  |
        | NULL       |
        | NULL, NULL |
        | NULL, 0    |
        | NULL, -1   |
        | NULL, 1001 |
        | NULL, 5    |

  @cap:provision @cap:sourceSql @cap:scopes
  Rule: each non-NULL bound is an integer from 1 through 1000

    @negative
    Scenario Outline: a bound outside 1..1000 is refused and nothing changes
      When role "app_operator" runs on the source database:
        """
        SELECT synchro.synchro_register_assignment_function('public.team_scopes', <bound>);
        """
      Then the SQL statement fails with SQLSTATE "22023"
      And when client "B" of user "alice" connects as a fresh client, the scopes added are exactly "team:t_7", "team:t_8" and "user:alice"

      Examples:
        | bound |
        | 0     |
        | -1    |
        | 1001  |

    Scenario Outline: the boundary bounds are accepted
      When role "app_operator" runs on the source database:
        """
        SELECT synchro.synchro_register_assignment_function('public.team_scopes', <bound>);
        """
      Then the SQL statement succeeds

      Examples:
        | bound |
        | 1     |
        | 1000  |

  @cap:provision @cap:sourceSql @cap:scopes
  Rule: a NULL bound, chosen by an operator, evaluates the complete DISTINCT result without a count limit

    Scenario: more than 1000 distinct results are all assigned, duplicates once
      Given role "app_operator" has run on the source database:
        """
        CREATE FUNCTION public.bulk_scopes(p text) RETURNS SETOF text LANGUAGE sql STABLE
          SET search_path = pg_catalog, synchro
          BEGIN ATOMIC
            SELECT 'bulk:' || (g % 1001)::text FROM pg_catalog.generate_series(1, 1500) AS g WHERE p IS NOT NULL;
          END;
        REVOKE ALL ON FUNCTION public.bulk_scopes(text) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION public.bulk_scopes(text) TO synchro_owner;
        SELECT synchro.synchro_register_assignment_function('public.bulk_scopes', NULL);
        """
      When client "B" of user "alice" connects as a fresh client
      Then the response status is 200
      And the response member "/scopes/add" holds 1002 scopes: "user:alice" and "bulk:0" through "bulk:1000", each once

  @cap:provision @cap:sourceSql @cap:scopes
  Rule: the NULL bound removes only the count limit and every other check stays

    @negative
    Scenario: a restricted candidate is still refused with a NULL bound
      Given role "app_operator" has run on the source database:
        """
        CREATE FUNCTION public.candidate_scopes(p text) RETURNS SETOF text LANGUAGE sql VOLATILE
          SET search_path = pg_catalog, synchro
          BEGIN ATOMIC SELECT 'team:x'; END;
        REVOKE ALL ON FUNCTION public.candidate_scopes(text) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION public.candidate_scopes(text) TO synchro_owner;
        """
      When role "app_operator" runs on the source database:
        """
        SELECT synchro.synchro_register_assignment_function('public.candidate_scopes', NULL);
        """
      Then the SQL statement fails
      And when client "B" of user "alice" connects as a fresh client, the scopes added are exactly "team:t_7", "team:t_8" and "user:alice"

    @negative
    Scenario: an edited definition is still refused under a NULL bound
      Given role "app_operator" has run on the source database:
        """
        SELECT synchro.synchro_register_assignment_function('public.team_scopes', NULL);
        """
      And client "A" of user "alice" has connected and rebuilt every assigned scope
      When role "app_operator" runs on the source database:
        """
        CREATE OR REPLACE FUNCTION public.team_scopes(p_user_id text) RETURNS SETOF text LANGUAGE sql STABLE
          SET search_path = pg_catalog, synchro
          BEGIN ATOMIC
            SELECT 'team:' || m.team_id FROM public.team_members AS m;
          END;
        """
      And client "A" pulls
      Then the response status is 500 with error code "sync_integrity_failure"
      And the response has no member "/scope_updates"

    Scenario: reconciliation still advances the version by one under a NULL bound
      Given role "app_operator" has run on the source database:
        """
        SELECT synchro.synchro_register_assignment_function('public.team_scopes', NULL);
        """
      And client "A" of user "alice" has connected and rebuilt every assigned scope
      And the harness notes the scope_set_version of client "A" as V
      When the harness commits on the source database:
        """
        INSERT INTO public.team_members VALUES ('alice', 't_10');
        """
      And client "A" pulls
      Then the response member "/scope_set_version" equals V + 1
      And the response member "/scope_updates/add" equals [{"id":"team:t_10","cursor":null}]

  @cap:provision @cap:sourceSql @cap:scopes
  Rule: each evaluation confirms the registered definition hash

    @negative
    Scenario Outline: an edited or dropped function fails connect and pull until it is registered again
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And the harness notes the scope_set_version of client "A" as V
      When role "app_operator" runs on the source database:
        """
        <edit>
        """
      And client "A" pulls
      Then the response status is 500 with error code "sync_integrity_failure"
      And the response has no member "/scope_updates"
      When client "B" of user "alice" connects as a fresh client
      Then the response status is 500 with error code "sync_integrity_failure"

      Examples:
        | edit                                                                                                                                                                                                                  |
        | CREATE OR REPLACE FUNCTION public.team_scopes(p_user_id text) RETURNS SETOF text LANGUAGE sql STABLE SET search_path = pg_catalog, synchro BEGIN ATOMIC SELECT 'team:' \|\| m.team_id FROM public.team_members AS m; END; |
        | DROP FUNCTION public.team_scopes(text);                                                                                                                                                                               |

    Scenario: re-registering the edited function restores evaluation with the new definition
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And the harness notes the scope_set_version of client "A" as V
      And role "app_operator" has run on the source database:
        """
        CREATE OR REPLACE FUNCTION public.team_scopes(p_user_id text) RETURNS SETOF text LANGUAGE sql STABLE
          SET search_path = pg_catalog, synchro
          BEGIN ATOMIC
            SELECT 'team:' || m.team_id FROM public.team_members AS m WHERE m.user_id = p_user_id AND m.team_id <> 't_8';
          END;
        SELECT synchro.synchro_register_assignment_function('public.team_scopes', 100);
        """
      When client "A" pulls
      Then the response status is 200
      And the response member "/scope_set_version" equals V + 1
      And the response member "/scope_updates/remove" equals ["team:t_8"]

  @cap:provision @cap:sourceSql @cap:scopes
  Rule: both modes reject a NULL result, a result blank after trim and a result starting with user:

    @negative
    Scenario Outline: an invalid result fails the evaluation in <mode> mode
      Given role "app_operator" has run on the source database:
        """
        CREATE FUNCTION public.odd_scopes(p text) RETURNS SETOF text LANGUAGE sql STABLE
          SET search_path = pg_catalog, synchro
          BEGIN ATOMIC
            SELECT s FROM (VALUES ('team:ok'), (<bad result>)) AS v(s) WHERE p IS NOT NULL;
          END;
        REVOKE ALL ON FUNCTION public.odd_scopes(text) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION public.odd_scopes(text) TO synchro_owner;
        SELECT synchro.synchro_register_assignment_function('public.odd_scopes', <bound>);
        """
      When client "B" of user "alice" connects as a fresh client
      Then the response status is 500 with error code "sync_integrity_failure"
      And the response has no member "/scopes"

      Examples:
        | mode      | bound | bad result    |
        | bounded   | 10    | NULL::text    |
        | bounded   | 10    | ''            |
        | bounded   | 10    | '   '         |
        | bounded   | 10    | E'\t\n'       |
        | bounded   | 10    | 'user:bob'    |
        | bounded   | 10    | 'user:alice'  |
        | unbounded | NULL  | NULL::text    |
        | unbounded | NULL  | '   '         |
        | unbounded | NULL  | 'user:bob'    |

  @cap:provision @cap:sourceSql @cap:scopes
  Rule: a bounded evaluation rejects more distinct results than max_scopes

    @negative
    Scenario: three distinct results under a bound of 2 fail instead of being truncated
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And the harness notes the scope_set_version of client "A" as V
      And role "app_operator" has run on the source database:
        """
        SELECT synchro.synchro_register_assignment_function('public.team_scopes', 2);
        INSERT INTO public.team_members VALUES ('alice', 't_10');
        """
      When client "A" pulls
      Then the response status is 500 with error code "sync_integrity_failure"
      And the response has no member "/scope_updates"

    Scenario: duplicates count once against the bound
      Given role "app_operator" has run on the source database:
        """
        CREATE FUNCTION public.dup_scopes(p text) RETURNS SETOF text LANGUAGE sql STABLE
          SET search_path = pg_catalog, synchro
          BEGIN ATOMIC
            SELECT s FROM (VALUES ('team:a'), ('team:a'), ('team:b')) AS v(s) WHERE p IS NOT NULL;
          END;
        REVOKE ALL ON FUNCTION public.dup_scopes(text) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION public.dup_scopes(text) TO synchro_owner;
        SELECT synchro.synchro_register_assignment_function('public.dup_scopes', 2);
        """
      When client "B" of user "alice" connects as a fresh client
      Then the response status is 200
      And the scopes added in the response are exactly "team:a", "team:b" and "user:alice"

  @cap:provision @cap:sourceSql @cap:scopes
  Rule: a rejected evaluation fails the whole connect or pull with 500 sync_integrity_failure and changes no assignment

    @negative
    Scenario: a failing pull is not read as an empty set, and the set is intact once the data is repaired
      Given role "app_operator" has run on the source database:
        """
        CREATE FUNCTION public.label_scopes(p text) RETURNS SETOF text LANGUAGE sql STABLE
          SET search_path = pg_catalog, synchro
          BEGIN ATOMIC
            SELECT m.team_id FROM public.team_members AS m WHERE m.user_id = p;
          END;
        REVOKE ALL ON FUNCTION public.label_scopes(text) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION public.label_scopes(text) TO synchro_owner;
        SELECT synchro.synchro_register_assignment_function('public.label_scopes', 100);
        """
      And client "A" of user "alice" has connected and rebuilt every assigned scope
      And the harness notes the scope_set_version of client "A" as V
      When the harness commits on the source database:
        """
        INSERT INTO public.team_members VALUES ('alice', '  ');
        """
      And client "A" pulls
      Then the response status is 500 with error code "sync_integrity_failure"
      And the response has no member "/scope_updates" and no member "/changes"
      And the error message contains none of "t_7", "t_8" or "alice"
      When client "B" of user "alice" connects as a fresh client
      Then the response status is 500 with error code "sync_integrity_failure"
      When the harness commits on the source database:
        """
        DELETE FROM public.team_members WHERE team_id = '  ';
        """
      And client "A" pulls
      Then the response status is 200
      And the response member "/scope_set_version" equals V
      And the response member "/scope_updates" equals {"add":[],"remove":[]}
      And the response member "/scope_cursors" has keys "t_7", "t_8" and "user:alice"

    @negative
    Scenario: a failing pull over the bound is not truncated, and the set is intact once the data is repaired
      Given role "app_operator" has run on the source database:
        """
        SELECT synchro.synchro_register_assignment_function('public.team_scopes', 2);
        """
      And client "A" of user "alice" has connected and rebuilt every assigned scope
      And the harness notes the scope_set_version of client "A" as V
      When the harness commits on the source database:
        """
        INSERT INTO public.team_members VALUES ('alice', 't_10');
        """
      And client "A" pulls
      Then the response status is 500 with error code "sync_integrity_failure"
      When the harness commits on the source database:
        """
        DELETE FROM public.team_members WHERE team_id = 't_10';
        """
      And client "A" pulls
      Then the response status is 200
      And the response member "/scope_set_version" equals V
      And the response member "/scope_updates" equals {"add":[],"remove":[]}
