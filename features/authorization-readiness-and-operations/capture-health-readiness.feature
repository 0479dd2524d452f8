@SYNC-OPS-003 @server @internal
Feature: Capture Health Readiness
  GET /ready is read by machines that route traffic, so it must fail closed.
  The adapter does not compute readiness on its own: it asks the extension for
  the canonical result for its configured database and answers 200 only when
  that result is exactly an object with one member "ready" set to true, which
  the extension in turn gives only when every required check is in state "ok"
  (each check is "ok", "failed" or "unknown"). Anything else (a failed or
  unknown check, a missing check, a detail map that disagrees with itself, a
  query error) means 503. The detailed check map is for the monitor and
  operator roles only and never appears on the public endpoint. The harness
  forces check states and extension answers, then compares /ready status and
  body byte for byte.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
    And capture has materialized every committed source transaction

  Rule: the adapter derives readiness from the canonical extension result for its configured database

    @cap:provision @cap:inspect
    Scenario: a healthy server answers exactly {"ready":true}
      When the harness requests GET /ready
      Then the readiness response is 200 with body exactly:
        """
        {"ready":true}
        """
      And the response header "Content-Type" is "application/json"

    @negative @cap:provision @cap:sourceSql
    Scenario Outline: an extension result of <result> gives 503 {"ready":false}
      Given the extension's readiness function for the configured database is replaced by one that <result>
      When the harness requests GET /ready
      Then the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """

      Examples:
        | result                                                   |
        | returns {"ready":false}                                  |
        | returns {"ready":true,"checks":{}}                       |
        | returns {"ready":"true"}                                 |
        | returns {"ready":1}                                      |
        | returns {"Ready":true}                                   |
        | returns [true]                                           |
        | returns SQL NULL                                         |
        | raises an error                                          |
        | sleeps past the adapter's query timeout                  |

    @negative @cap:provision @cap:sourceSql
    Scenario: the adapter loses EXECUTE on the readiness function
      When the operator revokes EXECUTE on "synchro.synchro_readiness()" from "synchro_adapter"
      Then the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """

    @negative @cap:provision @cap:sourceSql @cap:capture
    Scenario: a database that is reachable but is not the configured one does not lend its readiness
      Given a second database "other_db" in the same cluster with a healthy capture setup
      When the configured database's capture worker is stopped
      Then the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """

  Rule: overall status is ready only when every required tri-state check is ok

    @negative @cap:provision @cap:sourceSql @cap:inspect
    Scenario Outline: one required check in state "<state>" makes the server unready
      When the harness forces capture check "<check>" to state "<state>" and leaves every other check "ok"
      Then server inspection reports overall ready false in the health detail
      And the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """

      Examples:
        | check               | state   |
        | heartbeat           | failed  |
        | heartbeat           | unknown |
        | replication_slot    | failed  |
        | materialization_progress | unknown |
        | publication         | failed  |
        | registry_generation | unknown |

    @negative @cap:provision @cap:sourceSql @cap:inspect
    Scenario Outline: a health state that is <defect> makes the server unready
      When the harness makes the health state <defect>
      Then the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """

      Examples:
        | defect                                                                   |
        | absent, by deleting the worker heartbeat record                          |
        | absent, by removing the capture progress record                          |
        | inconsistent, with an acknowledged boundary beyond the processed boundary |
        | unavailable, because the health query fails                              |

    @property @cap:provision @cap:sourceSql
    Scenario: for many generated check maps, ready is true exactly when every required check is ok
      When the harness forces many generated combinations of the required checks, each drawn from "ok", "failed", "unknown" and absent
      Then GET /ready answers 200 {"ready":true} for exactly the combinations where every required check is "ok"
      And answers 503 {"ready":false} for every other combination

  Rule: the detailed check map is never exposed publicly

    @negative @cap:provision @cap:sourceSql
    Scenario Outline: the public body stays bare when <situation>
      Given <setup>
      When the harness requests GET /ready with query "?detail=1" and header "Accept: application/json"
      Then the response body is exactly one of {"ready":true} or {"ready":false}
      And the response body contains no check name, reason code, LSN, number or database name

      Examples:
        | situation             | setup                                                 |
        | the server is healthy | capture has materialized every committed source transaction |
        | a check has failed    | the harness forces capture check "poison" to state "failed" and leaves every other check "ok" |

    @negative @cap:provision @cap:sourceSql
    Scenario Outline: role "<role>" cannot read the health detail
      Given a login role "<role>_login" that is a member of "<role>" only
      When "<role>_login" runs:
        """
        SELECT synchro.synchro_health_detail();
        """
      Then the statement is refused with SQLSTATE "42501"

      Examples:
        | role            |
        | synchro_adapter |
        | synchro_seed    |
