@SYNC-CAP-011 @server @internal
Feature: Capture Readiness
  A load balancer sends traffic to a server only when GET /ready says so. A
  database that answers a ping can still be unable to capture: the worker may
  be dead or attached to another database, the registry unvalidated, a fence
  trigger disabled, the publication wrong, the slot gone, a poison active, or
  progress out of order. Capture is ready only for the configured database and
  only when every one of those checks is healthy. The harness breaks one
  condition at a time on an otherwise healthy server, expects
  503 {"ready":false} and the matching check to be unhealthy in the detailed
  health that server inspection reads, then restores the condition and expects
  200 {"ready":true} again.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And capture has materialized every committed source transaction

  Rule: capture reports ready for the configured database when the worker, heartbeat, registry, triggers, publication, slot, poison state and progress are all healthy

    @cap:provision @cap:inspect
    Scenario: a healthy server is ready and every required check is ok
      When the harness requests GET /ready
      Then the readiness response is 200 with body exactly:
        """
        {"ready":true}
        """
      And server inspection reports every required capture check as "ok"

    @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario: the server stays ready under sustained writes within the configured limits
      When the harness commits 200 single-row inserts into "public.tasks" over 20 seconds
      And the harness requests GET /ready after each commit
      Then every readiness response is 200 with body exactly {"ready":true}

  Rule: ready status with any missing or unhealthy required check is a violation

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario Outline: <break> makes the server unready until it is restored
      When the harness breaks capture by <break>
      Then the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """
      And server inspection reports the capture check "<check>" as not "ok"
      When the harness restores what it broke
      And capture has materialized every committed source transaction
      Then the readiness response is 200 with body exactly:
        """
        {"ready":true}
        """

      Examples:
        | break                                                                  | check                    |
        | stopping the capture worker                                            | worker                   |
        | ageing the worker heartbeat by one day                                 | heartbeat                |
        | storing an unvalidated registry generation as the active one           | registry_generation      |
        | disabling trigger "synchro_capture_fence" on "public.tasks"            | capture_triggers         |
        | dropping trigger "synchro_primary_key_guard" on "public.tasks"         | capture_triggers         |
        | removing "public.tasks" from the publication                           | publication              |
        | adding an unregistered table to the publication                        | publication              |
        | adding a column list to the publication entry of "public.tasks"        | publication              |
        | adding a row filter to the publication entry of "public.tasks"         | publication              |
        | dropping the active replication slot                                   | replication_slot         |
        | replacing the active slot with a temporary slot of the same name       | replication_slot         |
        | replacing the active slot with a "test_decoding" slot of the same name | replication_slot         |
        | injecting a poison transaction                                         | poison                   |
        | holding a stream reset in phase "preparing"                            | stream_reset             |
        | clearing the recorded acknowledgement boundary                         | materialization_progress |
        | renaming "public.tasks" to "public.tasks_renamed"                      | relation_identity        |
        | pausing materialization until the oldest unmaterialized commit is 2 minutes old with a 30 second limit | wal_time_lag |

  Rule: a database ping alone is not readiness

    @negative @cap:provision @cap:capture
    Scenario: a reachable database with the extension installed but no running worker is not ready
      Given a freshly installed server whose database is reachable
      And no capture worker has ever run against it
      When the harness requests GET /ready
      Then the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """

  Rule: a worker attached to another database does not make this database ready

    @negative @cap:provision @cap:capture @cap:inspect
    Scenario: the only running capture worker serves a different database
      Given a second database "other_db" in the same cluster with its own capture setup
      When the capture worker of the configured database is stopped
      And a capture worker runs against "other_db"
      Then the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """
      And server inspection reports the capture check "worker" as "failed"
