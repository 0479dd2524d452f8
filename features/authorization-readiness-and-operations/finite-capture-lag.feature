@SYNC-OPS-004 @server @internal
Feature: Finite Capture Lag
  A server whose worker stopped an hour ago, or whose WAL backlog grows without
  bound, must not keep taking traffic. Readiness therefore compares three
  observations (worker heartbeat age, WAL lag in bytes, age of the oldest
  commit not yet materialized) against three configured maxima. The maxima must
  be finite positive numbers, and each observation must be known, finite,
  nonnegative and within its maximum; anything missing, unparseable, zero,
  negative, infinite or exceeded is unready, and a missing observation never
  counts as zero. The harness configures each maximum with bad values, moves
  the clock, pauses materialization and stops the worker, and checks /ready and
  the observations in the health detail.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
    And the server is configured with heartbeat age maximum 30 seconds, WAL lag maximum 67108864 bytes and commit age maximum 30 seconds
    And capture has materialized every committed source transaction

  Rule: heartbeat age, WAL lag bytes and oldest-unmaterialized-commit age are known, finite, nonnegative and within finite positive maxima

    @cap:provision @cap:inspect
    Scenario: a caught-up server reports three known observations within their maxima and is ready
      Then server inspection shows the observations "heartbeat_age_seconds", "wal_lag_bytes" and "wal_lag_seconds" as finite numbers of at least 0
      And server inspection shows "heartbeat_age_seconds" at most 30, "wal_lag_bytes" at most 67108864 and "wal_lag_seconds" at most 30
      And the readiness response is 200 with body exactly:
        """
        {"ready":true}
        """

  Rule: a missing, zero, negative, non-finite or unparseable maximum makes readiness unready

    @negative @cap:provision @cap:inspect
    Scenario Outline: the <limit> maximum set to <value> is an invalid limit
      When the server is reconfigured with the <limit> maximum <value>
      Then server inspection reports the capture check "<check>" as "failed"
      And the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """

      Examples:
        | limit      | value         | check        |
        | heartbeat age | unset      | heartbeat    |
        | heartbeat age | "0"        | heartbeat    |
        | heartbeat age | "-5"       | heartbeat    |
        | heartbeat age | "Infinity" | heartbeat    |
        | heartbeat age | "NaN"      | heartbeat    |
        | heartbeat age | "thirty"   | heartbeat    |
        | WAL lag       | unset      | wal_byte_lag |
        | WAL lag       | "0"        | wal_byte_lag |
        | WAL lag       | "-1"       | wal_byte_lag |
        | WAL lag       | "1e400"    | wal_byte_lag |
        | WAL lag       | "64MB?"    | wal_byte_lag |
        | commit age    | unset      | wal_time_lag |
        | commit age    | "0"        | wal_time_lag |
        | commit age    | "-30"      | wal_time_lag |
        | commit age    | "inf"      | wal_time_lag |
        | commit age    | ""         | wal_time_lag |

  Rule: a missing, negative, non-finite, unparseable or exceeded observation makes readiness unready

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:clock @cap:inspect
    Scenario Outline: <situation> makes the server unready
      When <action>
      Then server inspection reports the capture check "<check>" as not "ok"
      And the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """

      Examples:
        | situation                                          | action                                                                                                   | check        |
        | a heartbeat older than its maximum                 | the capture worker is stopped and the server clock advances by 31 seconds                                 | heartbeat    |
        | a heartbeat dated in the future                    | the harness sets the worker heartbeat 60 seconds ahead of the database clock                              | heartbeat    |
        | a missing heartbeat                                | the harness deletes the worker heartbeat record                                                           | heartbeat    |
        | WAL lag beyond its maximum                         | the capture worker is paused and the harness commits 70000000 bytes of writes to "public.tasks"          | wal_byte_lag |
        | WAL lag that cannot be measured                    | the harness drops the active replication slot                                                             | wal_byte_lag |
        | an oldest unmaterialized commit older than allowed | the capture worker is paused, the harness commits one write to "public.tasks" and the server clock advances by 120 seconds | wal_time_lag |
        | a commit age that cannot be known while poisoned   | the harness injects a poison transaction                                                                  | wal_time_lag |

    @negative @cap:provision @cap:capture @cap:inspect
    Scenario: an unknown observation is reported as unknown, never as zero
      When the harness drops the active replication slot
      Then server inspection shows the observation "wal_lag_bytes" as null
      And server inspection reports the capture check "wal_byte_lag" as "unknown" or "failed"
