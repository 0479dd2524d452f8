@SYNC-OPS-005 @server
Feature: Operational Data Redaction
  Logs, metrics, traces, readiness output and quarantine records are read by
  more people and systems than the synced data itself, and they are kept
  longer. They may carry reason codes, operation classes, logical relation
  IDs, commit positions, counts and durations, but never synced values,
  primary keys, user or client IDs, scope instances, mutation bodies, tokens,
  credentials, raw requests, raw WAL, SQL text or unbounded error text. The
  harness plants unique canary strings in every identifying and payload
  position, drives the server through successful and failing paths, collects
  every operational output the adapter exposes, and searches for the canaries.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And the harness uses these canaries:
      | position            | canary                                 |
      | primary key         | cnry-pk-5b1e                           |
      | synced value        | cnry-val-93ac                          |
      | user ID (JWT sub)   | cnry-user-0d7f                         |
      | client ID           | cnry-client-44e2                       |
      | scope instance      | user:cnry-user-0d7f                    |
      | mutation ID         | 6a1f0c2e-9b3d-4e5f-8a7b-c0ffee5ca7e1   |
      | bearer credential   | the full signed JWT of "cnry-user-0d7f" |
      | SQL text            | /* cnry-sql-7e08 */                    |
    And user "cnry-user-0d7f" is assigned scope "user:cnry-user-0d7f"

  Rule: logs, metric labels, traces, readiness output and quarantine text contain none of the prohibited values

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:logs @cap:inspect
    Scenario: a full workload leaves no canary in any operational output
      When client "cnry-client-44e2" of user "cnry-user-0d7f" connects, rebuilds every assigned scope, pushes an insert of row "cnry-pk-5b1e" with title "cnry-val-93ac" as mutation "6a1f0c2e-9b3d-4e5f-8a7b-c0ffee5ca7e1" and pulls until "has_more" is false
      And the same client pushes an update of row "cnry-pk-5b1e" with a stale base version, producing a conflict
      And the same client pushes an update whose title has the wrong type, producing a validation failure
      And the same client pulls with a cursor that has one byte flipped
      And the harness commits on the source database:
        """
        /* cnry-sql-7e08 */ UPDATE public.tasks SET title = 'cnry-val-93ac' WHERE id = 'cnry-pk-5b1e';
        """
      And the harness makes the next source transaction fail with a membership function that returns NULL for the row
      And the harness commits on the source database:
        """
        /* cnry-sql-7e08 */ INSERT INTO public.tasks (id, owner_id, title) VALUES ('cnry-pk-5b1e-2', 'cnry-user-0d7f', 'cnry-val-93ac');
        """
      And the capture worker completes 3 polls
      And the harness requests GET "/ready"
      Then none of the canaries appears in the captured adapter and database logs
      And none of the canaries appears in any readiness response body
      And none of the canaries appears in the health detail that server inspection reads
      And none of the canaries appears in any quarantine record
      And no captured operational output contains a cursor, rebuild token, seed page token prefix "sp1." or seed receipt prefix "sc1." issued during the run
      And none of the canaries appears in any metric name, label name or label value
      And none of the canaries appears in any captured trace span name or attribute

    @negative @cap:provision @cap:logs
    Scenario Outline: a malformed request with a canary in <where> is not echoed into logs or the error body
      When the harness sends a raw pull request with a canary in <where>:
        """
        <body>
        """
      Then the response status is 400 with error code "invalid_request"
      And the response body contains none of the canaries
      And none of the canaries appears in the captured adapter and database logs

      Examples:
        | where               | body                                                                                                                                   |
        | an unknown member   | {"client_id":"cnry-client-44e2","client_generation":1,"schema":{"version":1,"hash":"0000000000000000000000000000000000000000000000000000000000000000"},"scope_set_version":0,"scopes":{},"limit":10,"cnry-val-93ac":true} |
        | an invented scope   | {"client_id":"cnry-client-44e2","client_generation":1,"schema":{"version":1,"hash":"0000000000000000000000000000000000000000000000000000000000000000"},"scope_set_version":0,"scopes":{"user:cnry-other":{"cursor":null}},"limit":10} |
        | a malformed cursor  | {"client_id":"cnry-client-44e2","client_generation":1,"schema":{"version":1,"hash":"0000000000000000000000000000000000000000000000000000000000000000"},"scope_set_version":0,"scopes":{"user:cnry-user-0d7f":{"cursor":"cnry-val-93ac"}},"limit":10} |

  Rule: errors are classified and bounded before they are logged or stored

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:logs @cap:inspect
    Scenario: a huge downstream error message is neither stored nor logged in full
      Given the membership function of table "tasks" is replaced by one that raises an error whose message is 100000 copies of "cnry-err-x"
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-e', 'cnry-user-0d7f', 'x');
        """
      And the capture worker completes 3 polls
      Then server inspection shows one active quarantine record with failure class "scope_evaluation_failed"
      And every text member of the quarantine record is at most 512 bytes long
      And no quarantine record contains "cnry-err-x"
      And no captured log line contains "cnry-err-x"
      And no captured log line is longer than 4096 bytes

    @negative @cap:provision @cap:logs
    Scenario: metric labels stay low-cardinality across many users
      When 50 clients of 50 distinct users each connect and pull once
      Then no metric label takes more than 20 distinct values during the run
