@SYNC-SCOPE-004 @server
Feature: Membership Generation Invalidation
  A cursor says "you have everything in this scope up to here" under one set of
  membership rules. When the rules change (a new membership function, a new
  dependency, a different composition, a controlled change of the relation),
  the scope's past contents may differ, so old cursors and rebuild sessions of
  the affected scopes no longer mean anything and must be refused into a
  rebuild. Scopes the change does not touch must keep working incrementally:
  invalidating everything would turn a small rule change into a fleet-wide
  rebuild. The harness changes one rule at a time for a client holding an
  affected and an unaffected scope, and checks the membership generations in
  server inspection, the "rebuild" list of pull responses, the rebuild
  continuation answers and the contents after rebuild.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | team     | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And a registered table "templates" with columns:
      | column | type   | key |
      | id     | string | yes |
      | title  | string | no  |
    And table "templates" places each row in scope "templates_public"
    And user "alice" is assigned scope "user:alice"
    And user "alice" is assigned scope "templates_public"
    And user "alice" is assigned scope "team:red"
    And the harness has committed and capture has materialized:
      """
      INSERT INTO public.tasks (id, owner_id, team) VALUES ('t-1', 'alice', 'red'), ('t-2', 'bob', 'red'), ('t-3', 'alice', 'blue');
      INSERT INTO public.templates (id, title) VALUES ('tpl-1', 'checklist'), ('tpl-3', 'agenda');
      """
    And client "A" of user "alice" has connected and rebuilt every assigned scope
    And the harness records the cursors client "A" inspects as "old"
    And the harness records the membership generation of every scope as "before"

  Rule: a membership rule, dependency, composition or controlled relation change mints a new generation for the affected scopes

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario Outline: <change> advances the generation of the affected scopes and no other
      When the operator applies <change>
      And capture has materialized every committed source transaction
      Then server inspection shows the membership generation of scopes "<affected>" greater than in "before"
      And server inspection shows the membership generation of scope "templates_public" equal to "before"

      Examples:
        | change                                                                                  | affected            |
        | a new membership function for "tasks" that places each row in scope "team:{team}"       | user:alice, team:red |
        | a new dependency of "tasks" on a capture-only table "public.teams"                      | user:alice          |
        | a composition change of "tasks" from "single_scope" to "multi_scope"                    | user:alice          |
        | a controlled reconfiguration that binds "tasks" to a renamed relation "public.tasks_v2"  | user:alice          |

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: an ordinary row change does not advance any membership generation
      When the harness commits on the source database:
        """
        UPDATE public.tasks SET team = 'blue' WHERE id = 't-1';
        """
      And capture has materialized every committed source transaction
      Then server inspection shows the membership generation of every scope equal to "before"

  Rule: only the affected cursors and rebuild sessions become stale

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: the unaffected scope keeps pulling incrementally from its old cursor
      When the operator applies a new membership function for "tasks" that places each row in scope "team:{team}"
      And the harness commits on the source database:
        """
        INSERT INTO public.templates (id, title) VALUES ('tpl-2', 'new template');
        """
      And capture has materialized every committed source transaction
      And client "A" pulls presenting the "old" cursors
      Then the response status is 200
      And the pull response lists scopes "team:red, user:alice" in "rebuild"
      And the pull response does not list scope "templates_public" in "rebuild"
      And the pull response lists exactly these changes:
        | scope            | table     | op     | pk    |
        | templates_public | templates | upsert | tpl-2 |

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: a rebuild session of an affected scope must restart while one of an unaffected scope continues
      Given client "A" has started a rebuild of scope "user:alice" with limit 1 and holds its continuation
      And client "A" has started a rebuild of scope "templates_public" with limit 1 and holds its continuation
      When the operator applies a new membership function for "tasks" that places each row in scope "team:{team}"
      And capture has materialized every committed source transaction
      And client "A" continues its rebuild of scope "user:alice"
      Then the response status is 409 with error code "rebuild_restart_required"
      And the error body has "scope_id" "user:alice"
      When client "A" continues its rebuild of scope "templates_public"
      Then the response status is 200

  Rule: affected scopes must rebuild, and the rebuild reflects the new rules

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: after rebuilding, an affected scope holds exactly the rows of the new rule
      When the operator applies a new membership function for "tasks" that places each row in scope "team:{team}"
      And capture has materialized every committed source transaction
      And client "A" pulls presenting the "old" cursors
      And client "A" rebuilds scope "team:red" to its final page
      Then the rebuild pages hold exactly these records:
        | table | pk  |
        | tasks | t-1 |
        | tasks | t-2 |
      When client "A" rebuilds scope "user:alice" to its final page
      Then the rebuild pages hold exactly these records:
        | table | pk |

  Rule: interpreting an old cursor under changed rules, or invalidating unrelated scopes, is a violation

    @negative @cap:provision @cap:sourceSql @cap:capture
    Scenario: an old cursor of an affected scope never yields incremental changes computed under the new rule
      When the operator applies a new membership function for "tasks" that places each row in scope "team:{team}"
      And the harness commits on the source database:
        """
        UPDATE public.tasks SET owner_id = 'carol' WHERE id = 't-2';
        """
      And capture has materialized every committed source transaction
      And client "A" pulls presenting the "old" cursors
      Then the pull response lists scope "user:alice" in "rebuild"
      And the pull response lists no change in scope "user:alice"
      And the pull response has no entry for scope "user:alice" in "scope_cursors"

    @negative @cap:provision @cap:sourceSql @cap:capture
    Scenario: a rule change for "tasks" leaves the "templates_public" cursor and checksum valid
      When the operator applies a new membership function for "tasks" that places each row in scope "team:{team}"
      And capture has materialized every committed source transaction
      And client "A" pulls presenting the "old" cursors until "has_more" is false
      Then the final pull response carries a checksum for scope "templates_public" equal to the checksum client "A" verified at its last rebuild of that scope
      And the pull response does not list scope "templates_public" in "rebuild"
