@SYNC-CAP-004 @server @internal
Feature: Idempotent WAL Replay
  The worker will be interrupted: between its materialization commit and the
  slot advance, inside the materialization transaction, or by a database
  restart. Whatever the interruption, a committed source transaction must be
  materialized as one unit, under the same transaction and event identities,
  and a second attempt must land on exactly the same result. Otherwise clients
  receive a change twice, see half a transaction, or get a second server
  version for one row transition. The harness kills the worker at fixed points,
  restarts it, and compares transaction, event, effect, version and edge counts
  through server inspection and the pulled changes on the wire.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scopes "user:{owner_id},shared:board"
    And user "alice" is assigned scope "user:alice"
    And user "alice" is assigned scope "shared:board"
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  Rule: one committed source transaction is one atomic replay unit

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: a worker killed inside materialization leaves nothing visible, then materializes everything once
      Given the capture worker is held before its materialization commit
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'one'), ('t-2', 'alice', 'two'), ('t-3', 'alice', 'three');
        """
      And the capture worker is killed
      Then server inspection shows no transaction record, event, row version, membership edge or pull effect for that transaction
      When client "A" pulls
      Then the pull response lists no change for table "tasks"
      When the capture worker is restarted
      And capture has materialized every committed source transaction
      Then server inspection shows exactly 1 transaction record and 3 event records for that transaction
      And server inspection shows the slot acknowledgement at or after the end of that transaction

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: a transaction is never split into separately durable parts
      Given the capture worker is held after materializing 1 of the events of the next transaction
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-4', 'alice', 'four');
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-5', 'alice', 'five');
        """
      And the capture worker is killed
      Then server inspection shows no event record, pull effect or acknowledgement for that transaction
      When client "A" pulls
      Then the pull response lists no change for table "tasks"

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: a rolled-back source transaction leaves no trace
      When the harness runs on the source database and rolls back:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-r', 'alice', 'never');
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-6', 'alice', 'after');
        """
      And capture has materialized every committed source transaction
      Then server inspection shows no transaction record, event, row version, write fence, membership edge or pull effect for row "t-r"

  Rule: transaction and event identities are stable and a retry reproduces exactly one materialized result

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario Outline: a worker killed <point> replays to the same single result
      Given capture has materialized every committed source transaction
      And the capture worker is set to be killed <point>
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'one'), ('t-2', 'alice', 'two');
        UPDATE public.tasks SET title = 'one again' WHERE id = 't-1';
        """
      And the harness records the server versions that inspection reports for rows "t-1, t-2"
      And the capture worker is restarted
      And capture has materialized every committed source transaction
      Then server inspection shows exactly 1 transaction record for that transaction, with the same stream generation and commit position as before the kill
      And server inspection shows each event identity of that transaction exactly once
      And server inspection shows each pull effect position exactly once
      And server inspection shows exactly one row version per fence of that transaction
      And the server versions of rows "t-1, t-2" equal the recorded ones
      When client "A" pulls
      Then the pull response lists exactly these changes:
        | scope        | table | op     | pk  |
        | shared:board | tasks | upsert | t-1 |
        | shared:board | tasks | upsert | t-2 |
        | user:alice   | tasks | upsert | t-1 |
        | user:alice   | tasks | upsert | t-2 |

      Examples:
        | point                                                   |
        | after its materialization commit and before the slot advance |
        | after the slot advance and before recording the acknowledgement |
        | by an immediate database shutdown right after the acknowledgement |

  Rule: duplicate versions, edges or effects are a violation

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: replaying a materialized transaction twice adds nothing
      Given capture has materialized every committed source transaction
      And the capture worker is set to be killed after its materialization commit and before the slot advance
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-7', 'alice', 'seven');
        """
      And the harness records the server versions that inspection reports for rows "t-7"
      And the harness records the counts of transaction records, events, row versions, membership edges and pull effects
      And the capture worker is restarted
      And capture has materialized every committed source transaction
      Then the counts of transaction records, events, row versions, membership edges and pull effects equal the recorded counts
      And the membership edges of row "t-7" are exactly "shared:board, user:alice" in bytewise order

    @negative @cap:provision @cap:sourceSql @cap:capture
    Scenario: a client whose pull succeeded before the crash does not receive the change again
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-8', 'alice', 'eight');
        """
      And client "A" has pulled until "has_more" is false
      When the capture worker is killed
      And the capture worker is restarted
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists no change for table "tasks"
