@SYNC-SCOPE-003 @server
Feature: Dependency Driven Membership Propagation
  A row's scopes often depend on other rows: a comment belongs to the team of
  its project, a task is visible to the owner of its parent task. When such a
  dependency row changes, every row whose membership it feeds must be
  re-evaluated, including rows that only the old image pointed at (a move away
  from a team) and siblings in the same relation. The evaluation must see the
  final projected state at the end of the source transaction, not a later live
  state, and a failing impact function must block capture rather than count as
  "no rows affected". The harness changes dependency rows through SQL and
  checks the moves clients pull, the membership edges server inspection records
  per transaction, and the quarantine when impact evaluation fails.

  Background:
    Given a capture-only dependency registration for table "public.projects" with key column "id" and captured fields "team"
    And a registered table "comments" with columns:
      | column     | type   | key |
      | id         | string | yes |
      | project_id | string | no  |
      | body       | string | no  |
    And table "comments" places each row in the scope "team:{team}" of the "public.projects" row whose "id" equals its "project_id"
    And the dependency of "comments" on "public.projects" has an impact function returning the comments whose "project_id" equals the old or new project "id", with max_impact_rows 3
    And user "alice" is assigned scope "team:red"
    And user "bob" is assigned scope "team:blue"
    And the harness has committed and capture has materialized:
      """
      INSERT INTO public.projects (id, team) VALUES ('p-1', 'red'), ('p-2', 'red');
      INSERT INTO public.comments (id, project_id, body) VALUES ('c-1', 'p-1', 'one'), ('c-2', 'p-1', 'two'), ('c-3', 'p-1', 'three'), ('c-4', 'p-2', 'other');
      """
    And client "A" of user "alice" has connected and rebuilt every assigned scope
    And client "B" of user "bob" has connected and rebuilt every assigned scope

  Rule: every declared dependency change is captured through its synced or capture-only registration and re-evaluates every affected row

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: moving a project to another team moves all of its comments, and only them
      When the harness commits on the source database:
        """
        UPDATE public.projects SET team = 'blue' WHERE id = 'p-1';
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes:
        | scope    | table    | op     | pk  |
        | team:red | comments | delete | c-1 |
        | team:red | comments | delete | c-2 |
        | team:red | comments | delete | c-3 |
      When client "B" pulls
      Then the pull response lists exactly these changes:
        | scope     | table    | op     | pk  |
        | team:blue | comments | upsert | c-1 |
        | team:blue | comments | upsert | c-2 |
        | team:blue | comments | upsert | c-3 |

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: a sibling dependency in the same relation is followed through its self-impact declaration
      Given a registered table "tasks" with columns:
        | column    | type   | key | nullable |
        | id        | string | yes | no       |
        | parent_id | string | no  | yes      |
        | owner_id  | string | no  | yes      |
      And table "tasks" places each row in scope "user:{owner_id}" of its root task, found through "parent_id"
      And the dependency of "tasks" on itself has a self-impact function returning the children of the old and new row
      And user "alice" is assigned scope "user:alice"
      And user "bob" is assigned scope "user:bob"
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, parent_id, owner_id) VALUES ('root', NULL, 'alice'), ('child', 'root', NULL);
        """
      And client "A" has connected and rebuilt every assigned scope
      And client "B" has connected and rebuilt every assigned scope
      When the harness commits on the source database:
        """
        UPDATE public.tasks SET owner_id = 'bob' WHERE id = 'root';
        """
      And capture has materialized every committed source transaction
      And client "B" pulls
      Then the pull response lists exactly these changes:
        | scope    | table | op     | pk    |
        | user:bob | tasks | upsert | child |
        | user:bob | tasks | upsert | root  |

  Rule: the captured old and new images together identify every affected row

    @negative @cap:provision @cap:sourceSql @cap:capture
    Scenario Outline: <change> reaches the scopes of the old image as well as the new one
      When the harness commits on the source database:
        """
        <sql>
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes:
        | scope    | table    | op     | pk  |
        | team:red | comments | delete | c-4 |

      Examples:
        | change                             | sql                                                         |
        | moving project "p-2" away          | UPDATE public.projects SET team = 'green' WHERE id = 'p-2'; |
        | deleting project "p-2"             | DELETE FROM public.projects WHERE id = 'p-2';                |

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: after each transaction the stored edges equal a from-scratch evaluation
      When the harness commits on the source database and records the commit position as "T1":
        """
        UPDATE public.projects SET team = 'blue' WHERE id = 'p-1';
        """
      And the harness commits on the source database and records the commit position as "T2":
        """
        UPDATE public.comments SET project_id = 'p-2' WHERE id = 'c-1';
        """
      And capture has materialized every committed source transaction
      Then after each of those transactions server inspection shows membership edges equal to a fresh evaluation of every comment against that transaction's projected state

  Rule: membership is evaluated against the final commit-ordered projected state of the source transaction

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: a project moved twice in one transaction produces only the final move
      Given user "alice" is assigned scope "team:green"
      And client "A" has connected and rebuilt every assigned scope
      When the harness commits on the source database:
        """
        UPDATE public.projects SET team = 'blue' WHERE id = 'p-2';
        UPDATE public.projects SET team = 'green' WHERE id = 'p-2';
        """
      And capture has materialized every committed source transaction
      And client "B" pulls
      Then the pull response lists no change for table "comments"
      When client "A" pulls
      Then the pull response lists exactly these changes:
        | scope      | table    | op     | pk  |
        | team:green | comments | upsert | c-4 |
        | team:red   | comments | delete | c-4 |

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: a later committed transaction does not leak into the evaluation of an earlier one
      Given the capture worker is paused
      When the harness commits on the source database and records the commit position as "T1":
        """
        UPDATE public.projects SET team = 'blue' WHERE id = 'p-2';
        """
      And the harness commits on the source database and records the commit position as "T2":
        """
        UPDATE public.projects SET team = 'red' WHERE id = 'p-2';
        """
      And the capture worker resumes
      And capture has materialized every committed source transaction
      Then server inspection shows the membership edges of row "c-4" of table "comments" at position "T1" exactly as "team:blue"
      And server inspection shows the membership edges of row "c-4" of table "comments" at position "T2" exactly as "team:red"
      And server inspection shows, at position "T1", a delete effect for "c-4" in "team:red" and an upsert effect in "team:blue"

  Rule: an impact evaluation failure is never treated as no impact

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario Outline: an impact function that <fails> blocks capture and moves nothing
      Given the impact function of the dependency of "comments" on "public.projects" is replaced by one that <fails>
      When the harness commits on the source database:
        """
        UPDATE public.projects SET team = 'blue' WHERE id = 'p-1';
        """
      And the capture worker completes 3 polls
      Then server inspection shows one active quarantine record with failure class "scope_evaluation_failed"
      When client "A" pulls
      Then the response status is 503 with error code "temporary_unavailable"
      And the error body has "retryable" true and "reason" "capture_blocked"
      When client "B" pulls
      Then the response status is 503 with error code "temporary_unavailable"

      Examples:
        | fails                                                    |
        | raises an error                                          |
        | returns a row reference with pk_type "int" for a string key |
        | returns a row reference to table "tbl_other"             |
        | returns more rows than its max_impact_rows of 3          |
