@SYNC-SCOPE-001 @server
Feature: Deterministic Scope Membership
  Which scopes a row belongs to decides who receives it, what a rebuild
  contains and what a scope digest covers. If evaluating the same row against
  the same dependency state could give two answers, a replay, a rebuild and an
  incremental pull would disagree about the same scope. Membership is therefore
  a function of the committed row and dependency state only, normalized to a
  duplicate-free set in bytewise order, and a failed evaluation is an error that
  blocks capture, never an empty set that quietly removes the row from every
  scope. The harness evaluates the same state several times (replay after a
  crash, repeated rebuilds, no-op dependency updates) and compares pulled
  changes, rebuild contents and scope checksums; it also makes evaluation fail
  and checks that nothing is deleted.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | team     | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scopes "user:{owner_id},team:{team},team:{team}"
    And user "alice" is assigned scope "user:alice"
    And user "alice" is assigned scope "team:red"
    And the harness has committed and capture has materialized:
      """
      INSERT INTO public.tasks (id, owner_id, team, title) VALUES ('t-1', 'alice', 'red', 'one');
      """
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  Rule: repeated evaluation of the same row and dependency state gives the same normalized scope set

    @cap:provision @cap:inspect
    Scenario: a membership result with duplicates is stored as one bytewise-sorted set
      Then server inspection shows the membership edges of row "t-1" of table "tasks" exactly as "team:red, user:alice" in bytewise order

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: replaying the same transaction after a crash gives the identical edge set
      Given the capture worker is set to be killed after its materialization commit and before the slot advance
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, team, title) VALUES ('t-2', 'alice', 'red', 'two');
        """
      And the harness records the membership edges of row "t-2" of table "tasks" as "first"
      And the capture worker is restarted
      And capture has materialized every committed source transaction
      Then the membership edges of row "t-2" of table "tasks" equal the recorded "first" byte for byte

    @property @cap:provision @cap:sourceSql @cap:capture
    Scenario: for many generated row sets, two rebuilds of each scope give identical records and checksums
      Given the harness commits many generated sets of 1 to 50 rows of table "tasks" with owners from "alice, bob" and teams from "red, blue, red"
      And capture has materialized every committed source transaction
      When client "A" rebuilds every assigned scope to its final page twice
      Then both rebuilds of each scope hold the same records with the same row checksums and the same final scope checksum

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: an update that leaves the scope inputs unchanged re-evaluates to the same scopes
      When the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'renamed' WHERE id = 't-1';
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes:
        | scope      | table | op     | pk  |
        | team:red   | tasks | upsert | t-1 |
        | user:alice | tasks | upsert | t-1 |

  Rule: a different set for the same state, or a failed evaluation treated as an empty set, is a violation

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario Outline: a membership function that <fails> blocks capture instead of emptying the row's scopes
      Given the membership function of table "tasks" is replaced by one that <fails> for row "t-1"
      When the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'trigger re-evaluation' WHERE id = 't-1';
        """
      And the capture worker completes 3 polls
      Then server inspection shows one active quarantine record with failure class "scope_evaluation_failed"
      And server inspection shows the membership edges of row "t-1" of table "tasks" exactly as "team:red, user:alice" in bytewise order
      When client "A" pulls
      Then the response status is 503 with error code "temporary_unavailable"
      And the error body has "retryable" true and "reason" "capture_blocked"
      And no response to client "A" ever lists a "delete" of row "t-1"

      Examples:
        | fails                                                     |
        | returns NULL                                              |
        | returns the empty string                                  |
        | returns "   "                                             |
        | raises an error                                           |
        | returns more distinct scopes than its max_scope_fanout of 2 |

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: a membership function whose answer depends on the moment of evaluation is refused at registration
      Given the source database has functions:
        """
        CREATE FUNCTION app.tasks_by_second(p_row_key text) RETURNS SETOF text LANGUAGE sql STABLE
          BEGIN ATOMIC
            SELECT CASE WHEN extract(second FROM now())::integer % 2 = 0 THEN 'user:' || owner_id ELSE 'team:' || team END
              FROM synchro_projection.tasks WHERE id = p_row_key;
          END;
        """
      And the harness records the active registry generation as "before"
      When the operator registers "app.tasks_by_second" as the membership function of table "tasks" with max_scope_fanout 10
      Then the registration fails with error code "invalid_registration" and reason "invalid_scope_function"
      And server inspection shows the active registry generation equal to "before"
