@SYNC-CAP-001 @server @internal
Feature: No Silent Server Change Loss
  A committed write to a registered table is a promise to every client that can
  see the row: it reaches them through pull, or the stream stops and says so.
  The server may be slow to publish a change, but it may never lose one, and it
  may never let a broken transaction be stepped over so that later work looks
  complete. The harness commits changes while it stops, kills and restarts the
  capture worker, injects transactions that cannot be materialized, and checks
  that each change is pulled exactly once or that capture stays blocked, with
  the quarantine record and the slot position read through the inspection
  capability.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And user "alice" is assigned scope "user:alice"
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  Rule: a committed change stays eligible until its complete pull-visible representation is durable

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: a direct write committed while the worker is down is pulled once after restart
      Given the capture worker is stopped
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'written while capture was down');
        """
      And the capture worker is restarted
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes:
        | scope      | table | op     | pk  |
        | user:alice | tasks | upsert | t-1 |

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: a worker killed inside materialization loses nothing
      Given the capture worker is held before its materialization commit
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'one'), ('t-2', 'alice', 'two');
        """
      And the capture worker is killed
      And the capture worker is restarted
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes:
        | scope      | table | op     | pk  |
        | user:alice | tasks | upsert | t-1 |
        | user:alice | tasks | upsert | t-2 |

    @cap:provision @cap:capture
    Scenario: an accepted push is withheld, not dropped, while capture is paused
      Given the capture worker is paused
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | owner_id | title   |
        | 0f8e7a52-3c1d-4b7e-9a10-5d2c8e4f6a01 | insert    | tasks | t-1 | alice    | pending |
      Then the push outcome of mutation "0f8e7a52-3c1d-4b7e-9a10-5d2c8e4f6a01" is "applied"
      When client "A" pulls
      Then the response status is 503 with error code "capture_pending"
      When the capture worker resumes
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes:
        | scope      | table | op     | pk  |
        | user:alice | tasks | upsert | t-1 |

  Rule: a transaction whose representation fails is durably quarantined

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario Outline: a <failure> leaves a quarantine record that survives a worker restart
      When the harness makes the next source transaction fail with <failure>
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-9', 'alice', 'poison');
        """
      And the capture worker completes 1 polls
      And the capture worker is killed
      And the capture worker is restarted
      Then server inspection shows one active quarantine record for that transaction with failure class "<class>"
      And the quarantine record names the stream generation, the commit position and the relation of table "tasks"

      Examples:
        | failure                                            | class                   |
        | a membership function that returns NULL for the row | scope_evaluation_failed |
        | an injected undecodable fence message              | decode_failed           |
        | a materialization write that the database rejects  | materialization_failed  |

  Rule: a quarantined transaction blocks later processing and acknowledgement

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: a good transaction committed after the poison is neither materialized nor acknowledged
      Given the harness makes the next source transaction fail with a membership function that returns NULL for the row
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-9', 'alice', 'poison');
        """
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-10', 'alice', 'good');
        """
      And the capture worker completes 1 polls
      And the capture worker is killed
      And the capture worker is restarted
      Then server inspection shows the slot acknowledgement at or before the commit position of the poison transaction
      And server inspection shows no transaction record for the transaction that inserted "t-10"
      And the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: the poison is not dropped and later progress is not served
      Given the harness makes the next source transaction fail with a membership function that returns NULL for the row
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-9', 'alice', 'poison');
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-10', 'alice', 'good');
        """
      When client "A" pulls
      Then the pull either answers 503 "temporary_unavailable" with reason "capture_blocked" or lists no change for rows "t-9, t-10"
      When the harness repairs the membership function and requests a retry of the quarantined transaction
      And capture has materialized every committed source transaction
      And client "A" pulls with its last issued cursors
      Then the pull response lists exactly these changes:
        | scope      | table | op     | pk   |
        | user:alice | tasks | upsert | t-9  |
        | user:alice | tasks | upsert | t-10 |
