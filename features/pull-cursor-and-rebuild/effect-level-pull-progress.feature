@SYNC-PULL-003 @server
Feature: Effect Level Pull Progress
  A single source event can change many rows of one scope, for example when a
  project moves to another team and all of its tasks follow it. Each such
  change is a separate effect with its own persisted position
  (commit_lsn, event_ordinal, effect_ordinal). The effect ordinal counts from
  zero per source event and scope, in the order (logical table ID, typed
  primary key, operation rank), so a cursor can stop between two effects of
  the same event and a later pull resumes exactly there. When deduplication
  lets a later version of a row stand for its earlier effects, the cursor may
  pass those earlier effects but must stay in front of the later candidate
  until that candidate is delivered. The effect ordinal only breaks ties for
  delivery; the identity used when the capture worker replays WAL remains
  (commit_lsn, event_ordinal).

  The harness moves a project with several tasks in one statement, pages
  through the resulting effects one at a time, repeats pulls from saved
  cursors, and replays the capture of the same transaction, checking that
  nothing is repeated, skipped or reordered.

  Background:
    Given a registered table "projects" with columns:
      | column | type   | nullable | key |
      | id     | string | false    | yes |
      | team   | string | false    | no  |
    And a registered table "tasks" with columns:
      | column     | type   | nullable | key |
      | id         | int    | false    | yes |
      | project_id | string | false    | no  |
      | title      | string | false    | no  |
    And table "projects" places each row in scope "team:{team}"
    And table "tasks" places each row in the scope "team:{team}" of the "projects" row whose "id" equals its "project_id"
    And the harness has committed and capture has materialized:
      """
      INSERT INTO public.projects (id, team) VALUES ('p-1', 'x'), ('p-2', 'y');
      INSERT INTO public.tasks (id, project_id, title) VALUES (10, 'p-1', 'ten'), (2, 'p-1', 'two'), (9, 'p-1', 'nine');
      """
    And the default scope of user "bob" is revoked
    And user "bob" is assigned scope "team:y"
    And the harness client "H" of user "bob" has completed a sync

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: a page cursor can stop and resume between effects of one source event

    @negative
    Scenario: the effects of one event are delivered one per page, in typed order, without repeats
      Given the harness has committed and capture has materialized:
        """
        UPDATE public.projects SET team = 'y' WHERE id = 'p-1';
        """
      When the harness client "H" pulls with limit 1 until "has_more" is false
      Then the drain took 4 pull responses
      And each response of the drain issued a cursor for scope "team:y"
      And the changes of the drain, concatenated in order, are exactly:
        | scope  | table    | op     | pk  |
        | team:y | projects | upsert | p-1 |
        | team:y | tasks    | upsert | 2   |
        | team:y | tasks    | upsert | 9   |
        | team:y | tasks    | upsert | 10  |

    Scenario: a saved mid-event cursor resumes at the same effect every time
      Given the harness has committed and capture has materialized:
        """
        UPDATE public.projects SET team = 'y' WHERE id = 'p-1';
        """
      And the harness client "H" pulls with limit 2 presenting its current cursors
      And the harness records the cursor issued for scope "team:y" in that response as "c1"
      When the harness client "H" pulls with limit 2 presenting cursor "c1" for scope "team:y"
      And the harness records that response as "first"
      And the capture worker is restarted
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.projects (id, team) VALUES ('p-3', 'x');
        """
      And the harness client "H" pulls with limit 2 presenting cursor "c1" for scope "team:y"
      And the harness records that response as "second"
      Then the pull response lists exactly these changes:
        | scope  | table | op     | pk |
        | team:y | tasks | upsert | 9  |
        | team:y | tasks | upsert | 10 |
      And member "changes" of "first" and of "second" are byte-identical

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture @cap:inspect
  Rule: every derived effect has a deterministic persisted delivery position

    Scenario: the effects of one event carry ordinals in logical table and typed key order
      When the harness commits on the source database:
        """
        UPDATE public.projects SET team = 'y' WHERE id = 'p-1';
        """
      And capture has materialized every committed source transaction
      Then server inspection shows the pull effects of that transaction for scope "team:y" as:
        | table    | pk  | event_ordinal | effect_ordinal |
        | projects | p-1 | 0             | 0              |
        | tasks    | 2   | 0             | 1              |
        | tasks    | 9   | 0             | 2              |
        | tasks    | 10  | 0             | 3              |
      And all of those pull effects share the commit_lsn of that transaction
      When the capture worker is restarted
      Then server inspection shows the same pull effects with the same positions

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: an issued cursor stays before a retained candidate until that candidate is delivered

    @negative
    Scenario: the earlier version of a row is covered by its later version, which is still delivered
      Given the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, project_id, title) VALUES (20, 'p-2', 'R v1');
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, project_id, title) VALUES (21, 'p-2', 'S1');
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, project_id, title) VALUES (22, 'p-2', 'S2');
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, project_id, title) VALUES (23, 'p-2', 'S3');
        """
      And the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'R v2' WHERE id = 20;
        """
      And capture has materialized every committed source transaction
      When the harness client "H" pulls with limit 2 presenting its current cursors
      Then the pull response lists exactly these changes:
        | scope  | table | op     | pk | title |
        | team:y | tasks | upsert | 21 | S1    |
        | team:y | tasks | upsert | 22 | S2    |
      And member "has_more" is true
      When the harness client "H" pulls with limit 2 presenting its current cursors
      Then the pull response lists exactly these changes:
        | scope  | table | op     | pk | title |
        | team:y | tasks | upsert | 23 | S3    |
        | team:y | tasks | upsert | 20 | R v2  |
      And member "has_more" is false
      And no response received by "H" in this scenario carried the title "R v1"

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: the effect ordinal is a delivery tie-breaker, never the WAL replay identity

    @negative
    Scenario: replaying the capture of an already materialized event creates no second delivery
      Given the capture worker will be killed after its next materialization commit and before it acknowledges the slot
      And the harness commits on the source database:
        """
        UPDATE public.projects SET team = 'y' WHERE id = 'p-1';
        """
      And the capture worker has been killed at that point
      When the harness client "H" pulls with limit 2 presenting its current cursors
      Then the pull response lists exactly these changes:
        | scope  | table    | op     | pk  |
        | team:y | projects | upsert | p-1 |
        | team:y | tasks    | upsert | 2   |
      When the capture worker is restarted
      And capture has materialized every committed source transaction
      And the harness client "H" pulls with limit 10 presenting its current cursors
      Then the pull response lists exactly these changes:
        | scope  | table | op     | pk |
        | team:y | tasks | upsert | 9  |
        | team:y | tasks | upsert | 10 |
      And member "has_more" is false
