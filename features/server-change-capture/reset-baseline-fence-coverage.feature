@SYNC-CAP-013 @server @internal
Feature: Reset Baseline Fence Coverage
  A stream reset builds a new baseline from a candidate slot's exported
  snapshot. Accepted writes whose fences are still pending at that moment must
  not fall through the gap between the old stream and the new one: each fence
  visible in the snapshot is covered by an immutable, verified baseline record
  and the row's final projected state and version, and each later fence is
  covered by ordinary WAL materialization from the candidate slot. Activation
  waits until every fence up to the barrier has exactly one of the two. The
  baseline records the final state in the snapshot, takes the version of a
  row with a pending fence from a covered fence of that row, invents nothing
  for rows the snapshot no longer holds, and keeps deletion versions staged.
  The harness leaves pushes pending across a reset, writes before and after the
  candidate slot exists, and checks coverage through server inspection and the
  pushing client's capture_pending answers, rebuild contents and versions on
  the wire.

  Background:
    Given a registered table "tasks" with columns:
      | column     | type     | key | lifecycle  |
      | id         | string   | yes |            |
      | owner_id   | string   | no  |            |
      | title      | string   | no  |            |
      | deleted_at | datetime | no  | deleted_at |
    And table "tasks" places each row in scope "user:{owner_id}"
    And user "alice" is assigned scope "user:alice"
    And a registered table "scratch" with columns:
      | column | type   | key |
      | id     | string | yes |
    And the harness has committed and capture has materialized:
      """
      INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'v0'), ('t-2', 'alice', 'v0'), ('t-3', 'alice', 'v0');
      """
    And client "A" of user "alice" has connected and rebuilt every assigned scope
    And the harness has committed on the source database, blocking the stream with a truncate poison:
      """
      TRUNCATE public.scratch;
      """

  Rule: every accepted fence visible in the imported snapshot gets immutable verified baseline coverage and complete projected row and version state

    @cap:provision @cap:capture @cap:inspect
    Scenario: a push left pending before the snapshot is covered by the baseline at activation
      Given client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version              | owner_id | title  |
        | 6f8a0b2c-5e7d-4a9f-8b1c-3d4e5f6a7b05 | update    | tasks | t-1 | current                      | alice    | pushed |
      And the push outcome of mutation "6f8a0b2c-5e7d-4a9f-8b1c-3d4e5f6a7b05" is "applied" with a server version recorded as "V"
      When the operator runs an authorized stream reset to completion
      Then server inspection shows the fence of mutation "6f8a0b2c-5e7d-4a9f-8b1c-3d4e5f6a7b05" with coverage "reset_baseline" bound to its fence ID, the reset ID, the candidate slot, the snapshot boundary and the new stream generation
      When client "A" rebuilds scope "user:alice" to its final page
      Then the rebuild pages hold row "t-1" of table "tasks" with title "pushed" and server version "V"

    @cap:provision @cap:capture @cap:inspect
    Scenario Outline: the pushing client keeps getting capture_pending while the reset is <state>
      Given client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version              | owner_id | title  |
        | 7a9b1c3d-6f8e-4b0a-9c2d-4e5f6a7b8c06 | update    | tasks | t-2 | current                      | alice    | pushed |
      And the push outcome of mutation "7a9b1c3d-6f8e-4b0a-9c2d-4e5f6a7b8c06" is "applied"
      When <action>
      And client "A" pulls
      Then the response status is 503 with error code "capture_pending"
      When client "A" requests a rebuild of scope "user:alice"
      Then the response status is 503 with error code "capture_pending"

      Examples:
        | state           | action                                                                          |
        | only staged     | the operator starts an authorized stream reset and holds it at phase "baseline_staged" |
        | aborted         | the operator starts an authorized stream reset, stages its baseline and aborts it |

  Rule: every fence after the snapshot reconciles through candidate-slot WAL

    @cap:provision @cap:capture @cap:inspect
    Scenario: a push accepted after the candidate slot exists is covered by WAL materialization, not by the baseline
      Given the operator starts an authorized stream reset and holds it after the candidate slot is created
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version              | owner_id | title |
        | 8b0c2d4e-7a9f-4c1b-8d3e-5f6a7b8c9d07 | update    | tasks | t-3 | current                      | alice    | later |
      And the push outcome of mutation "8b0c2d4e-7a9f-4c1b-8d3e-5f6a7b8c9d07" is "applied"
      And the operator lets the stream reset continue
      Then server inspection shows the fence of mutation "8b0c2d4e-7a9f-4c1b-8d3e-5f6a7b8c9d07" with coverage "materialized" from the candidate slot
      And server inspection shows no "reset_baseline" coverage record for that fence

  Rule: activation waits until every accepted fence through the barrier has exactly one coverage mode

    @cap:provision @cap:capture @cap:inspect
    Scenario: at activation each fence through the barrier is covered once, by the baseline or by WAL
      Given client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version              | owner_id | title  |
        | 9c1d3e5f-8b0a-4d2c-9e4f-6a7b8c9d0e08 | update    | tasks | t-1 | current                      | alice    | before |
      And the operator starts an authorized stream reset and holds it at phase "catching_up"
      And client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version              | owner_id | title  |
        | 0d2e4f6a-9c1b-4e3d-8f5a-7b8c9d0e1f09 | update    | tasks | t-2 | current                      | alice    | after  |
      When the operator asks the stream reset to activate before catch-up reaches the second push
      Then the activation waits or is refused until catch-up has materialized the second push
      When the operator lets the stream reset activate unless it already has
      Then server inspection shows every accepted fence up to the activation barrier with exactly one of coverage "reset_baseline" or "materialized"

  Rule: the projected state is the final state in the snapshot and a row with a pending fence takes its version from a covered fence of that row

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: three changes before the snapshot leave one final row and the version of its last covered fence
      When the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'v1' WHERE id = 't-1';
        UPDATE public.tasks SET title = 'v2' WHERE id = 't-1';
        UPDATE public.tasks SET title = 'v3' WHERE id = 't-1';
        """
      And the harness records the version of the last fence of row "t-1" as "last"
      And the operator runs an authorized stream reset to completion
      And client "A" rebuilds scope "user:alice" to its final page
      Then the rebuild pages hold row "t-1" of table "tasks" with title "v3" and server version "last"
      And server inspection shows 3 historical coverage records for row "t-1" kept apart from its projected state

  Rule: a row absent from the snapshot while its source version is live gets no row, no version, no invented event and no tombstone

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: rows removed by a truncate are absent from the baseline and never delivered as deletes
      Given the harness has committed on the source database, blocking the stream with a truncate poison:
        """
        TRUNCATE public.tasks;
        """
      And the harness has committed on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-4', 'alice', 'new');
        """
      When the operator runs an authorized stream reset to completion
      Then server inspection shows no projected row and no live version for rows "t-1, t-2, t-3" of table "tasks" in the new generation
      And server inspection shows no pull effect and no deletion version for rows "t-1, t-2, t-3" created by the reset
      When client "A" pulls
      Then the pull response lists scope "user:alice" in "rebuild"
      And the pull response lists no change for table "tasks"
      When client "A" rebuilds scope "user:alice" to its final page
      Then the rebuild pages hold exactly these records:
        | table | pk  |
        | tasks | t-4 |
      When client "A" pulls
      Then the pull response lists no change for table "tasks"

  Rule: a deletion version in the snapshot stays staged, including one set by a soft-delete update

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario Outline: a <kind> before the snapshot keeps its deletion version
      Given the harness has committed on the source database:
        """
        <sql>
        """
      And the harness records the version of the last fence of row "t-2" as "deletion"
      When the operator runs an authorized stream reset to completion
      Then server inspection shows the staged version of row "t-2" of table "tasks" equal to "deletion"
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version                         | owner_id | title   |
        | 1e3f5a7b-0d2c-4f4e-9a6b-8c9d0e1f2a10 | update    | tasks | t-2 | current                                       | alice    | revive |
      Then the rejected outcome of mutation "1e3f5a7b-0d2c-4f4e-9a6b-8c9d0e1f2a10" has status "conflict" and code "row_deleted"

      Examples:
        | kind               | sql                                                          |
        | hard delete        | DELETE FROM public.tasks WHERE id = 't-2';                    |
        | soft-delete update | UPDATE public.tasks SET deleted_at = now() WHERE id = 't-2'; |

  Rule: clearing a fence by LSN guess, fabricating an event, omitting a pre-boundary accepted write, or leaving a covered fence pending is a violation

    @negative @cap:provision @cap:capture
    Scenario: a pre-boundary accepted write reaches the pushing client and its capture_pending clears after activation
      Given client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version              | owner_id | title    |
        | 2f4a6b8c-1e3d-4a5f-8b7c-9d0e1f2a3b11 | update    | tasks | t-1 | current                      | alice    | accepted |
      And the push outcome of mutation "2f4a6b8c-1e3d-4a5f-8b7c-9d0e1f2a3b11" is "applied"
      When the operator runs an authorized stream reset to completion
      And client "A" pulls
      Then the response status is 200
      And the pull response lists scope "user:alice" in "rebuild"
      When client "A" rebuilds scope "user:alice" to its final page
      Then the rebuild pages hold row "t-1" of table "tasks" with title "accepted"

    @negative @cap:provision @cap:capture @cap:inspect
    Scenario: baseline coverage creates no incremental effect
      Given client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version              | owner_id | title    |
        | 3a5b7c9d-2f4e-4b6a-9c8d-0e1f2a3b4c12 | update    | tasks | t-2 | current                      | alice    | baseline |
      And the push outcome of mutation "3a5b7c9d-2f4e-4b6a-9c8d-0e1f2a3b4c12" is "applied"
      When the operator runs an authorized stream reset to completion
      Then server inspection shows no pull effect in the new stream generation at or before its generation start
      And server inspection shows every "reset_baseline" coverage record bound to a fence that was visible in the candidate slot's snapshot
