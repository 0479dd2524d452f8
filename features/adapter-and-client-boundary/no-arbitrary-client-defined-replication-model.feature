@SYNC-BOUND-005 @server
Feature: No Arbitrary Client-Defined Replication Model
  What a client receives is decided by the server's registered membership and
  assignment rules. A client names scopes only by the IDs the server assigned
  it. A request that smuggles in a filter, a predicate or SQL, or names a scope
  the server never assigned, must be refused before anything runs. Otherwise
  any client could read any data by describing it. The harness sends
  otherwise valid requests that carry such input in every place a scope or
  filter could hide. It expects 400 "invalid_request" with no data, and it
  checks with canary rows that the input was never executed.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key | nullable |
      | id       | string | yes | no       |
      | owner_id | string | no  | no       |
      | title    | string | no  | no       |
    And table "tasks" places each row in scope "user:{owner_id}"
    And the server holds these "tasks" rows, created by client "W":
      | id     | owner_id | title          | version |
      | t-own  | alice    | mine           | V1      |
      | t-bob  | bob      | canary-bob-731 | V2      |
    And the harness client "H" of user "alice" has connected and rebuilt every assigned scope

  Rule: Sync requests accept only server-assigned scope identifiers

    Scenario: A pull naming exactly the assigned scopes is served
      When the harness client "H" pulls presenting its current cursors
      Then the response status is 200
      And every change in the response has "scope" "user:alice"

    @negative
    Scenario Outline: A <endpoint> naming scope <scope> that was never assigned is refused
      When the harness client "H" sends a valid <endpoint> request naming scope <scope> <how>
      Then the response status is 400 with error code "invalid_request"
      And the response body does not contain "canary-bob-731"
      And no durable state changed on the server

      Examples:
        | endpoint | scope                                  | how                                   |
        | pull     | "user:bob"                             | with cursor null                      |
        | pull     | "team:made_up"                         | with cursor null                      |
        | pull     | "*"                                    | with cursor null                      |
        | pull     | "user:%"                               | with cursor null                      |
        | rebuild  | "user:bob"                             | as its "scope" with "cursor" null     |
        | rebuild  | "user:alice' OR '1'='1"                | as its "scope" with "cursor" null     |

    @negative
    Scenario: A connect listing a scope that was never assigned does not receive it
      When the harness client "H" connects presenting its installed schema and "known_scopes" with an extra entry "user:bob" holding cursor null
      Then member "scopes.add" does not list "user:bob"
      And member "scope_cursor_updates" has no entry for "user:bob"
      And the response body does not contain "canary-bob-731"

  Rule: Sync requests never accept client-authored predicates or ad hoc scope SQL

    @negative
    Scenario Outline: A <endpoint> request carrying a <kind> member is refused before any work
      When the harness client "H" sends a valid <endpoint> request with the extra top-level member <member>
      Then the response status is 400 with error code "invalid_request"
      And the response body does not contain "canary-bob-731"
      And no durable state changed on the server

      Examples:
        | endpoint | kind       | member                                                         |
        | pull     | filter     | "filter": {"owner_id": "bob"}                                  |
        | pull     | predicate  | "where": "owner_id = 'bob'"                                    |
        | pull     | scope SQL  | "scope_sql": "SELECT 'user:bob'"                               |
        | rebuild  | predicate  | "where": "true"                                                |
        | connect  | scope SQL  | "scope_query": "SELECT 'user:' \|\| id FROM auth.users"        |
        | connect  | scope list | "requested_scopes": ["user:bob"]                               |

    @negative @cap:sourceSql
    Scenario: SQL placed in a scope identifier is never executed
      When the harness client "H" sends a valid pull request naming scope "user:alice'; DELETE FROM public.tasks; --" with cursor null
      Then the response status is 400 with error code "invalid_request"
      And the source table "tasks" still holds rows "t-own" and "t-bob" unchanged
