@SYNC-CAP-007 @server @internal
Feature: Durable Reset Slot Lifecycle
  A stream reset replaces the slot the whole stream depends on. If the new slot
  is temporary, belongs to another database or plugin, has a gap, or cannot be
  found again after a crash, the new generation starts on a foundation that
  silently drops transactions. The reset therefore creates a permanent
  candidate slot over the replication protocol, imports its exported snapshot
  while the creating connection is still open, records every slot and boundary
  fact durably, and flips one durable active-slot pointer only after catch-up
  and verification. The harness drives a reset step by step, kills the
  operator session and the database at each phase, offers bad candidate slots,
  and reads the reset record, the slot catalog and readiness.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And user "alice" is assigned scope "user:alice"
    And client "A" of user "alice" has connected and rebuilt every assigned scope
    And the harness has committed on the source database, blocking the stream with a truncate poison:
      """
      TRUNCATE public.tasks;
      """

  Rule: a reset uses a permanent candidate logical slot created through the replication protocol

    @cap:provision @cap:capture @cap:inspect
    Scenario: the slot activated by a reset is permanent, logical, pgoutput and in the configured database
      When the operator runs an authorized stream reset to completion
      Then server inspection shows the active slot with:
        | slot_type | plugin   | temporary | database              |
        | logical   | pgoutput | false     | the configured database |
      And server inspection shows the reset record names that slot as its candidate slot
      And server inspection shows the candidate slot was created by a replication-protocol command that exported a snapshot

  Rule: the exported snapshot is imported while the creating connection remains valid

    @negative @cap:provision @cap:capture @cap:inspect
    Scenario: a reset whose creating connection closed before the import does not activate
      When the operator starts an authorized stream reset and holds it after the candidate slot is created
      And the harness closes the replication connection that created the candidate slot
      And the operator lets the stream reset continue
      Then the stream reset ends in lifecycle "aborted" or stays before "baseline_staged"
      And server inspection shows the active slot pointer unchanged
      And server inspection shows the old stream still blocked by its quarantine record
      And the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """

  Rule: the exact slot and boundary lifecycle is persisted

    @cap:provision @cap:capture @cap:inspect
    Scenario Outline: the reset record is durable and complete at phase "<phase>"
      When the operator starts an authorized stream reset and holds it at phase "<phase>"
      Then server inspection shows the reset record with a reset ID, the candidate slot name, the database, plugin "pgoutput", the consistent point, the snapshot boundary and lifecycle "<phase>"
      And server inspection reports the capture check "stream_reset" as "failed"
      And the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """

      Examples:
        | phase           |
        | preparing       |
        | baseline_staged |
        | catching_up     |

  Rule: the durable active-slot pointer switches atomically and only after complete catch-up and verification

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario Outline: an operator killed at phase "<phase>" resumes with the same slot or starts over, never half-activated
      Given the operator starts an authorized stream reset and holds it at phase "<phase>"
      And the harness records the reset record as "before"
      When the operator session is killed
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-k', 'alice', 'while the operator was gone');
        """
      Then server inspection shows the active slot pointer unchanged
      When the operator resumes or restarts the stream reset and runs it to completion
      Then the activated reset used either the candidate slot and consistent point of "before" or a new candidate slot whose reset record is complete
      And no slot that a reset record marks as aborted is the active slot
      When client "A" rebuilds scope "user:alice" to its final page
      Then the rebuild pages hold exactly these records:
        | table | pk  |
        | tasks | t-k |

      Examples:
        | phase           |
        | preparing       |
        | baseline_staged |
        | catching_up     |

    @cap:provision @cap:capture @cap:inspect
    Scenario: the worker follows the new active slot after a restart
      When the operator runs an authorized stream reset to completion
      And the capture worker is restarted
      Then server inspection shows the capture worker reading the slot that the active-slot pointer names
      And the readiness response is 200 with body exactly:
        """
        {"ready":true}
        """

  Rule: activating a temporary, missing, wrong-database, wrong-plugin, gapped or unrecoverable slot is a violation

    @negative @cap:provision @cap:capture @cap:inspect
    Scenario Outline: activation with a <bad> candidate slot fails and leaves the old stream blocked
      Given the operator starts an authorized stream reset and holds it at phase "catching_up"
      And the harness records the active slot pointer as "before"
      When the harness replaces the candidate slot with <replacement>
      And the operator asks the stream reset to activate
      Then the activation is refused
      And server inspection shows the active slot pointer equal to "before"
      And server inspection shows the old stream still blocked by its quarantine record
      And the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """

      Examples:
        | bad            | replacement                                                                   |
        | temporary      | a temporary logical slot of the same name                                     |
        | missing        | nothing, dropping the candidate slot                                          |
        | wrong-database | a permanent pgoutput slot of the same name in another database                |
        | wrong-plugin   | a permanent slot of the same name using plugin "test_decoding"                |
        | gapped         | the same slot advanced past a committed transaction that catch-up has not materialized |
        | unrecoverable  | a slot of the same name that PostgreSQL reports as invalidated ("lost")       |

  Rule: WAL continuity survives process death during a reset

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: an immediate database restart during catch-up loses no transaction
      Given the operator starts an authorized stream reset and holds it at phase "catching_up"
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'before crash');
        """
      # A checkpoint, as PostgreSQL takes one at any time, makes whatever the reset did to its slot durable before the crash.
      And the source database completes a checkpoint
      And the source database is shut down immediately and restarted
      # After the crash the candidate slot must still hold every transaction the reset has not activated.
      Then server inspection shows the reset record with a reset ID, the candidate slot name, the database, plugin "pgoutput", the consistent point, the snapshot boundary and lifecycle "catching_up"
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-2', 'alice', 'after crash');
        """
      And the operator resumes or restarts the stream reset and runs it to completion
      And client "A" rebuilds scope "user:alice" to its final page
      Then the rebuild pages hold exactly these records:
        | table | pk  |
        | tasks | t-1 |
        | tasks | t-2 |
