@SYNC-CAP-005 @server @internal
Feature: Contiguous WAL Acknowledgement
  Acknowledging a logical slot position tells PostgreSQL it may recycle the WAL
  before it. If the worker acknowledges a position before everything in front
  of it is durably materialized, a crash turns into permanent loss. The slot
  may therefore move only after the materialization commit, and only to a
  processed boundary before which every source transaction is complete. The
  harness blocks one transaction's materialization, commits more work behind
  it, forces crashes around the acknowledgement steps, and reads the slot's
  confirmed position and the worker's progress record through server
  inspection.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"

  Rule: the slot advances only after the materialization commit

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: while a transaction's materialization is blocked, the slot stays at or before its commit
      Given the capture worker is held before its materialization commit
      When the harness commits on the source database and records the commit position as "T":
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'blocked');
        """
      And the capture worker holds that transaction before its materialization commit
      Then server inspection shows the slot's confirmed position at or before position "T"
      When the capture worker is released
      And capture has materialized every committed source transaction
      Then server inspection shows the slot's confirmed position after position "T"

  Rule: the slot advances only to a durable processed boundary before which every source transaction is complete

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: an idle stream acknowledges up to the flush position read before decoding
      Given capture has materialized every committed source transaction
      When the harness commits 64 logical messages of 65536 bytes with prefix "harness_idle" that touch no registered table
      And the capture worker completes 2 polls
      Then server inspection shows the slot's confirmed position at the WAL flush position read before the last poll
      And server inspection reports the capture check "wal_byte_lag" as "ok"

    @property @cap:provision @cap:sourceSql @cap:inspect
    Scenario: the progress record keeps its ordering at every sample
      When the harness commits many generated transactions of 1 to 20 inserts, updates and deletes on table "tasks" and samples the progress record after each commit
      Then every sample satisfies generation start <= acknowledged boundary <= processed boundary
      And every sample satisfies materialized end <= processed boundary
      And every sample has the slot's confirmed position equal to the acknowledged boundary or the generation start when nothing was acknowledged

  Rule: acknowledging an event, a batch maximum, a later noncontiguous transaction, an incomplete transaction or a position after an unprocessed transaction is a violation

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario Outline: the slot never passes <case>
      Given <setup>
      When the harness commits on the source database and records the commit position as "T":
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'one'), ('t-2', 'alice', 'two'), ('t-3', 'alice', 'three');
        """
      And the harness commits on the source database and records the commit position as "U":
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-4', 'alice', 'later');
        """
      And the capture worker completes 3 polls
      Then server inspection shows the slot's confirmed position at or before position "T"
      And server inspection shows the acknowledged boundary at or before position "T"

      Examples:
        | case                                                    | setup                                                                              |
        | an event inside a transaction decoded in parts          | the worker's decode row limit is 1 and the worker is held before materializing "T" |
        | the maximum of a decoded batch whose first member failed | the harness makes the next source transaction fail with an injected materialization error |
        | a later transaction when the earlier one is blocked     | the capture worker is held before its materialization commit                      |
        | an unprocessed poison transaction during idle polls     | the harness makes the next source transaction fail with an injected undecodable fence message |

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: a worker killed during materialization does not acknowledge the incomplete transaction on restart
      Given the capture worker is held before its materialization commit
      When the harness commits on the source database and records the commit position as "T":
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'one');
        """
      And the capture worker is killed
      And the capture worker is restarted with materialization still blocked
      Then server inspection shows the slot's confirmed position at or before position "T"

  Rule: write order is processed boundary, then slot advance, then acknowledgement record, and startup reconciles them

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: after an immediate database shutdown the worker moves the slot to the recorded acknowledgement without replaying twice
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'one');
        """
      And the harness records the counts of transaction records, events, row versions, membership edges and pull effects
      When the source database is shut down immediately and restarted
      And the capture worker is restarted
      Then server inspection shows the slot's confirmed position equal to the acknowledged boundary
      And the counts of transaction records, events, row versions, membership edges and pull effects equal the recorded counts

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario Outline: the worker refuses a slot that <problem>
      Given <setup>
      When the capture worker is restarted
      Then the capture worker does not materialize or acknowledge anything
      And the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """
      And server inspection shows the slot still present and not rebound by the worker

      Examples:
        | problem                                              | setup                                                                                   |
        | is positioned before the stream's generation start   | the harness moves the active slot's recorded generation start past its confirmed position |
        | is positioned after the durable processed boundary   | the harness advances the active slot past the durable processed boundary                 |
        | already existed under the configured name unbound    | the harness replaces the active slot with a slot of the same name that the runtime never bound |
