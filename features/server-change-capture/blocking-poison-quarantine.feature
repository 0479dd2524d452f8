@SYNC-CAP-006 @server @internal
Feature: Blocking Poison Quarantine
  A source transaction that cannot be decoded, validated or materialized is a
  poison transaction. Skipping it would silently lose data; publishing part of
  it would show clients a state the database never committed. The stream stops
  at the poison, records why in a durable, redacted quarantine record, and
  stays stopped until one of two recoveries: the same transaction is retried
  under the same identities after a repair, or an operator runs a stream reset
  that builds a new verified baseline from a new slot's exported snapshot and
  forces every client to rebuild. The harness injects poison transactions,
  commits good work behind them, checks that nothing moves, then exercises both
  recoveries and watches the wire, readiness and the quarantine record.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And user "alice" is assigned scope "user:alice"
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  Rule: a transaction that cannot be decoded, validated or materialized creates a durable redacted quarantine record

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario Outline: a <kind> failure is quarantined without the row's values
      When the harness makes the next source transaction fail with <failure>
      And the harness commits on the source database and records the commit position as "P":
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('zz-marker-7f3a-zz', 'alice', 'zz-marker-7f3a-zz');
        """
      And the capture worker is restarted
      Then server inspection shows one active quarantine record at position "P" with failure class "<class>"
      And the quarantine record names the stream generation and the relation of table "tasks"
      And no text of the quarantine record contains "zz-marker-7f3a-zz"
      And every text member of the quarantine record is at most 512 bytes long

      Examples:
        | kind            | failure                                                      | class                   |
        | decode          | an injected undecodable fence message                        | decode_failed           |
        | validation      | a registry activation message for an unvalidated generation  | validation_failed       |
        | materialization | a membership function that returns NULL for the row          | scope_evaluation_failed |

  Rule: the poison blocks later processing and acknowledgement until a same-identity retry succeeds

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: after repair, the retry materializes the poison at its own position and then the work behind it
      Given the harness makes the next source transaction fail with a membership function that returns NULL for the row
      And the harness commits on the source database and records the commit position as "P":
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-p', 'alice', 'poison');
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-g', 'alice', 'good');
        """
      When the capture worker completes 3 polls
      Then server inspection shows the slot's confirmed position at or before position "P"
      And the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """
      When the harness repairs the membership function and requests a retry of the quarantined transaction
      And capture has materialized every committed source transaction
      Then server inspection shows the quarantine record at position "P" no longer active
      And server inspection shows the transaction record of row "t-p" at position "P"
      When client "A" pulls
      Then the pull response lists exactly these changes:
        | scope      | table | op     | pk  |
        | user:alice | tasks | upsert | t-p |
        | user:alice | tasks | upsert | t-g |
      And the readiness response is 200 with body exactly:
        """
        {"ready":true}
        """

  Rule: without a fixable cause, only an authorized stream reset from a new slot's exported snapshot recovers, and it forces rebuild

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: a truncate poison is recovered by a reset that rebuilds every client from the current source state
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'one'), ('t-2', 'alice', 'two');
        """
      And client "A" has pulled until "has_more" is false
      And the harness records the stream generation that inspection reports as "old"
      # The reference refuses TRUNCATE of a registered relation at the source (decision 10); a
      # session that disables that guard, as the table's owner can, still puts it in the WAL.
      When the harness commits on the source database:
        """
        ALTER TABLE public.tasks DISABLE TRIGGER synchro_capture_truncate_guard;
        TRUNCATE public.tasks;
        ALTER TABLE public.tasks ENABLE TRIGGER synchro_capture_truncate_guard;
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-3', 'alice', 'three');
        """
      And the capture worker completes 3 polls
      Then server inspection shows one active quarantine record with failure class "truncate_unsupported"
      And a same-identity retry of the quarantined transaction is refused
      When the operator runs an authorized stream reset to completion
      Then server inspection shows a stream generation different from "old"
      And server inspection shows the active slot is a new permanent logical "pgoutput" slot of the configured database
      When client "A" pulls
      Then the response status is 200
      And the pull response lists scope "user:alice" in "rebuild"
      And the pull response lists no change for table "tasks"
      When client "A" rebuilds scope "user:alice" to its final page
      Then the rebuild pages hold exactly these records:
        | table | pk  |
        | tasks | t-3 |
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-4', 'alice', 'after reset');
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes:
        | scope      | table | op     | pk  |
        | user:alice | tasks | upsert | t-4 |

  Rule: log-and-skip, partial publication, acknowledgement around the poison, reused projections, an independent live snapshot and incremental catch-up are violations

    @negative @cap:provision @cap:sourceSql @cap:capture
    Scenario: a transaction committed after the poison is never pulled while the poison is active
      Given the harness makes the next source transaction fail with an injected undecodable fence message
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-p', 'alice', 'poison');
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-g', 'alice', 'good');
        """
      When the capture worker completes 3 polls
      And client "A" pulls
      Then the pull either answers 503 "temporary_unavailable" with reason "capture_blocked" or lists no change for rows "t-p, t-g"

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: no part of a multi-row poison transaction is published
      Given the harness makes the next source transaction fail with a membership function that returns NULL for row "t-b" only
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-a', 'alice', 'fine');
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-b', 'alice', 'broken');
        """
      And the capture worker completes 3 polls
      Then server inspection shows no row version, membership edge or pull effect for row "t-a" of table "tasks"
      When client "A" pulls
      Then the pull either answers 503 "temporary_unavailable" with reason "capture_blocked" or lists no change for rows "t-a, t-b"

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: idle polls do not acknowledge past an active poison
      Given the harness makes the next source transaction fail with an injected undecodable fence message
      And the harness commits on the source database and records the commit position as "P":
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-p', 'alice', 'poison');
        """
      When the harness commits 64 logical messages of 65536 bytes with prefix "harness_idle" that touch no registered table
      And the capture worker completes 3 polls
      Then server inspection shows the slot's confirmed position at or before position "P"
      And server inspection shows the acknowledged boundary at or before position "P"

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: a write committed while the reset is staging is not served incrementally to old cursors
      # A plain TRUNCATE is refused at the source (decision 10): the poison bypasses the guard, as in SYNC-CAP-007.
      Given the harness has committed on the source database, blocking the stream with a truncate poison:
        """
        TRUNCATE public.tasks;
        """
      And the harness records the cursors client "A" inspects as "old"
      When the operator starts an authorized stream reset and holds it after the baseline is staged
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-c', 'alice', 'during catch-up');
        """
      And the operator lets the stream reset activate
      And client "A" pulls presenting the "old" cursors
      Then the response status is 200
      And the pull response lists scope "user:alice" in "rebuild"
      And the pull response lists no change for table "tasks"
      When client "A" rebuilds scope "user:alice" to its final page
      Then the rebuild pages hold exactly these records:
        | table | pk  |
        | tasks | t-c |

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: the reset baseline is read from the candidate slot's snapshot, not from the old projections or a later live read
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'before');
        """
      # The truncate bypasses the source-side guard and the insert follows in a transaction of its own
      # (an insert after a truncate in one transaction is refused, decision 267).
      And the harness has committed on the source database, blocking the stream with a truncate poison:
        """
        TRUNCATE public.tasks;
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-2', 'alice', 'at snapshot');
        """
      When the operator starts an authorized stream reset and holds it after the candidate slot is created
      And the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'after snapshot' WHERE id = 't-2';
        """
      And the operator lets the stream reset activate
      Then server inspection shows the staged baseline row "t-2" of table "tasks" with title "at snapshot"
      And server inspection shows no staged baseline row "t-1" of table "tasks"
      And server inspection shows the update to "after snapshot" materialized from the candidate slot's WAL
      When client "A" rebuilds scope "user:alice" to its final page
      Then the rebuild pages hold exactly these records:
        | table | pk  | title          |
        | tasks | t-2 | after snapshot |
