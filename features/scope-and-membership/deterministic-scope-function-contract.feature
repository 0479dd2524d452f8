@SYNC-SCOPE-002 @server @internal
Feature: Deterministic Scope Function Contract
  Membership, impact and assignment functions are application SQL that the
  server runs inside capture, connect and pull. They can only be trusted to be
  deterministic and safe if registration checks an exact contract: the
  registered signature, schema qualification, LANGUAGE SQL, STABLE, SECURITY
  INVOKER, declared dependencies read only through commit-ordered projections,
  capture-only registrations for non-synced dependencies, and positive bounds.
  Assignment functions have their own contract and a result bound of 1 to 1000
  or SQL NULL. A function that breaks any rule is refused and nothing
  activates. The harness registers one broken function per case and checks the
  error, that no generation activated, and for assignment functions the
  connect and pull outcome.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And the harness records the active registry generation as "before"

  Rule: membership and impact functions satisfy the registered signatures and restrictions

    @cap:provision @cap:sourceSql @cap:inspect
    Scenario: a function meeting the whole contract registers and activates a new generation
      Given the source database has functions:
        """
        CREATE FUNCTION app.task_scopes(p_row_key text) RETURNS SETOF text
          LANGUAGE sql STABLE SECURITY INVOKER
          BEGIN ATOMIC SELECT 'user:' || owner_id FROM synchro_projection.tasks WHERE id = p_row_key; END;
        """
      When the operator registers "app.task_scopes" as the membership function of table "tasks" with max_scope_fanout 10
      Then the registration succeeds
      And server inspection shows an active registry generation newer than "before"

    @negative @cap:provision @cap:sourceSql @cap:inspect
    Scenario Outline: a membership function that <breaks> is refused and nothing activates
      Given the source database has functions:
        """
        <definition>
        """
      When the operator registers "<name>" as the membership function of table "tasks" with max_scope_fanout <fanout>
      Then the registration fails with error code "invalid_registration" and reason "<reason>"
      And server inspection shows the active registry generation equal to "before"

      Examples:
        | breaks                              | name              | fanout | reason                 | definition |
        | is written in plpgsql               | app.f_plpgsql     | 10     | invalid_scope_function | CREATE FUNCTION app.f_plpgsql(p_row_key text) RETURNS SETOF text LANGUAGE plpgsql STABLE AS $$ BEGIN RETURN NEXT 'user:x'; END $$; |
        | is VOLATILE                         | app.f_volatile    | 10     | invalid_scope_function | CREATE FUNCTION app.f_volatile(p_row_key text) RETURNS SETOF text LANGUAGE sql VOLATILE BEGIN ATOMIC SELECT 'user:' \|\| owner_id FROM synchro_projection.tasks WHERE id = p_row_key; END; |
        | is SECURITY DEFINER                 | app.f_definer     | 10     | invalid_scope_function | CREATE FUNCTION app.f_definer(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE SECURITY DEFINER BEGIN ATOMIC SELECT 'user:' \|\| owner_id FROM synchro_projection.tasks WHERE id = p_row_key; END; |
        | takes an integer key for a text key | app.f_int_arg     | 10     | invalid_scope_function | CREATE FUNCTION app.f_int_arg(p_row_key integer) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'user:x'; END; |
        | returns a single text               | app.f_scalar      | 10     | invalid_scope_function | CREATE FUNCTION app.f_scalar(p_row_key text) RETURNS text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'user:x'; END; |
        | is named without its schema         | f_unqualified     | 10     | invalid_scope_function | CREATE FUNCTION public.f_unqualified(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'user:x'; END; |
        | reads the live table public.tasks   | app.f_live        | 10     | undeclared_dependency  | CREATE FUNCTION app.f_live(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'user:' \|\| owner_id FROM public.tasks WHERE id = p_row_key; END; |
        | reads an undeclared projection      | app.f_undeclared  | 10     | undeclared_dependency  | CREATE TABLE app.memberships (user_id text PRIMARY KEY, team text NOT NULL); SELECT synchro.synchro_prepare_projection_view('app.memberships'); CREATE FUNCTION app.f_undeclared(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'team:' \|\| team FROM synchro_projection.memberships WHERE user_id = p_row_key; END; |
        | reads the wall clock                | app.f_clock       | 10     | invalid_scope_function | CREATE FUNCTION app.f_clock(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'day:' \|\| extract(dow FROM now())::text; END; |
        | reads the caller identity           | app.f_caller      | 10     | invalid_scope_function | CREATE FUNCTION app.f_caller(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'user:' \|\| current_user::text; END; |
        | reads a setting                     | app.f_setting     | 10     | invalid_scope_function | CREATE FUNCTION app.f_setting(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'user:' \|\| current_setting('app.tenant'); END; |
        | reads random values                 | app.f_random      | 10     | invalid_scope_function | CREATE FUNCTION app.f_random(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'shard:' \|\| floor(random() * 4)::text; END; |
        | reads sequence state                | app.f_sequence    | 10     | invalid_scope_function | CREATE SEQUENCE app.s; CREATE FUNCTION app.f_sequence(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'shard:' \|\| currval('app.s')::text; END; |
        | runs dynamic SQL                    | app.f_dynamic     | 10     | invalid_scope_function | CREATE FUNCTION app.f_dynamic(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'user:' \|\| (xpath('/row/o/text()', query_to_xml('select owner_id as o from public.tasks where id = ' \|\| quote_literal(p_row_key), false, false, '')))[1]::text; END; |
        | declares a fanout bound of 0        | app.task_scopes   | 0      | invalid_limit          | CREATE FUNCTION app.task_scopes(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'user:' \|\| owner_id FROM synchro_projection.tasks WHERE id = p_row_key; END; |
        | declares a fanout bound of -1       | app.task_scopes   | -1     | invalid_limit          | CREATE FUNCTION app.task_scopes(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE BEGIN ATOMIC SELECT 'user:' \|\| owner_id FROM synchro_projection.tasks WHERE id = p_row_key; END; |

    @negative @cap:provision @cap:sourceSql @cap:inspect
    Scenario Outline: a dependency declaration that <breaks> is refused
      Given a table "public.projects" with key column "id" that is <registration>
      And the harness records the active registry generation as "before"
      When the operator declares a dependency of table "tasks" on "public.projects" with <impact> and max_impact_rows <bound>
      Then the registration fails with error code "invalid_registration" and reason "<reason>"
      And server inspection shows the active registry generation equal to "before"

      Examples:
        | breaks                                         | registration                                   | impact                                                   | bound | reason                 |
        | targets a relation with no dependency registration | not registered at all                       | impact function "app.project_impact"                     | 100   | undeclared_dependency  |
        | has no impact function                         | registered as a capture-only dependency        | no impact function                                       | 100   | undeclared_dependency  |
        | has an impact function with a wrong signature  | registered as a capture-only dependency        | impact function "app.impact_text" taking (text, text)    | 100   | invalid_scope_function |
        | has a zero impact bound                        | registered as a capture-only dependency        | impact function "app.project_impact"                     | 0     | invalid_limit          |

    # A capture-only registration never has a table ID of its own, so it
    # cannot be offered to clients; a declaration on it that meets the
    # contract is what activates.
    @cap:provision @cap:sourceSql @cap:inspect
    Scenario: a conforming dependency declaration on a capture-only registration activates, and the dependency stays off the wire
      Given a table "public.projects" with key column "id" that is registered as a capture-only dependency
      And the harness records the active registry generation as "before"
      When the operator declares a dependency of table "tasks" on "public.projects" with impact function "app.project_impact" and max_impact_rows 100
      Then the registration succeeds
      And server inspection shows an active registry generation newer than "before"
      And the published schema manifest has no table for relation "public.projects"

  Rule: no activation follows a contract violation

    @negative @cap:provision @cap:sourceSql @cap:schema @cap:inspect
    Scenario: a registration that fails late leaves the registry, manifest and edges untouched
      Given the harness records the current manifest reference as "before_manifest"
      When the operator registers in one call table "public.notes" with a valid membership function and table "tasks" with membership function "app.f_live"
      Then the registration fails with error code "invalid_registration"
      And server inspection shows the active registry generation equal to "before"
      And server inspection shows no registry entry for "public.notes"
      And a connect with the "before_manifest" reference answers schema action "none"

  Rule: assignment functions satisfy their own signature and restrictions

    @cap:provision @cap:sourceSql @cap:scopes
    Scenario: a conforming assignment function is registered and evaluated once per connect
      Given the source database has functions:
        """
        CREATE TABLE public.project_members (user_id text NOT NULL, project_id text NOT NULL, PRIMARY KEY (user_id, project_id));
        INSERT INTO public.project_members VALUES ('alice', 'p1'), ('alice', 'p2');
        CREATE FUNCTION public.project_scopes(p_user_id text) RETURNS SETOF text
          LANGUAGE sql STABLE SET search_path = pg_catalog, synchro
          BEGIN ATOMIC SELECT 'project:' || project_id FROM public.project_members WHERE user_id = p_user_id; END;
        REVOKE ALL ON FUNCTION public.project_scopes(text) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION public.project_scopes(text) TO synchro_owner;
        """
      When the operator registers assignment function "public.project_scopes" with max_scopes 100
      Then the registration succeeds
      When client "A" of user "alice" connects
      Then the connect response assigns scopes "project:p1, project:p2, user:alice"

    @negative @cap:provision @cap:sourceSql @cap:scopes @cap:inspect
    Scenario Outline: an assignment function that <breaks> is refused with no state change
      Given the source database has a variant of "public.project_scopes" that <breaks>
      And the harness records the assignment registration as "before_assignment"
      When the operator registers assignment function "public.project_scopes" with max_scopes 100
      Then the registration fails
      And server inspection shows the assignment registration equal to "before_assignment"

      Examples:
        | breaks                                        |
        | is written in plpgsql                         |
        | has a string body instead of BEGIN ATOMIC     |
        | takes two arguments                           |
        | takes a varchar argument                      |
        | gives its argument a default                  |
        | is VARIADIC                                   |
        | returns a single text                         |
        | is VOLATILE                                   |
        | is SECURITY DEFINER                           |
        | sets no search_path                           |
        | sets search_path to public                    |
        | is owned by another role than the registering operator |
        | lacks EXECUTE for synchro_owner               |
        | keeps EXECUTE for PUBLIC                      |
        | calls the function public.helper()            |
        | reads the table synchro.sync_clients          |
        | reads a table its owner has no SELECT on      |

    @negative @cap:provision @cap:sourceSql @cap:scopes
    Scenario: only an operator may register an assignment function
      When a login that is not a member of "synchro_operator" registers assignment function "public.project_scopes" with max_scopes 100
      Then the call fails with a permission error
      And no assignment function is registered

  Rule: the assignment result bound is 1 through 1000, or SQL NULL for administrator-selected unbounded evaluation

    @cap:provision @cap:sourceSql @cap:scopes
    Scenario Outline: bound <bound> is accepted
      When the operator registers assignment function "public.project_scopes" with max_scopes <bound>
      Then the registration succeeds

      Examples:
        | bound |
        | 1     |
        | 1000  |
        | NULL  |

    @negative @cap:provision @cap:sourceSql @cap:scopes
    Scenario Outline: bound <bound> is refused with SQLSTATE 22023
      When the operator registers assignment function "public.project_scopes" with max_scopes <bound>
      Then the call fails with SQLSTATE "22023"
      And no assignment function is registered

      Examples:
        | bound |
        | 0     |
        | -1    |
        | 1001  |

    @cap:provision @cap:sourceSql @cap:scopes
    Scenario Outline: with bound <bound> three distinct results give <outcome>
      Given "public.project_scopes" returns "project:p1, project:p2, project:p3" for user "alice"
      And the operator has registered assignment function "public.project_scopes" with max_scopes <bound>
      And the harness records the assignment state of user "alice" as "before_connect"
      When client "A" of user "alice" connects
      Then <outcome>

      Examples:
        | bound | outcome                                                                                                         |
        | 2     | the response status is 500 with error code "sync_integrity_failure" and the assignment state equals "before_connect" |
        | 3     | the connect response assigns scopes "project:p1, project:p2, project:p3, user:alice"                            |
        | NULL  | the connect response assigns scopes "project:p1, project:p2, project:p3, user:alice"                            |
