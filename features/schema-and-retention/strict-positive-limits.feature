@SYNC-SCHEMA-007 @server
Feature: Strict Positive Limits
  Every limit in the protocol has a positive maximum: page sizes, push body
  bytes, mutations per push, bytes per mutation, columns per mutation,
  compaction and backfill batch sizes, scope fanout and impact rows. A value
  outside its range is an error before any work is done. The server never
  quietly substitutes a default, clamps the value, truncates a result or
  carries on with part of the request, because a client cannot tell any of
  these from success. Push size and count limits are checked before the
  idempotency ledger is touched, so a refused batch identity can still be
  executed correctly later. The harness sends boundary values on the wire and
  checks for a 400 "invalid_request" with no side effects. It sets invalid
  administrative values through the operator controls and expects SQLSTATE
  22023 or "invalid_registration" with reason "invalid_limit".

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | nullable | key |
      | id       | string | false    | yes |
      | owner_id | string | false    | no  |
      | title    | string | false    | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And the harness client "H" of user "alice" has completed a sync

  Rule: Pull and rebuild page limits are integers from 1 to 1000, never defaulted or clamped

    @negative
    Scenario Outline: A pull with limit <value> is refused
      When the harness client "H" sends a valid pull request with member "limit" set to <value>
      Then the response status is 400 with error code "invalid_request"
      And the error body is either without context members or has "field" "limit", "minimum" 1 and "maximum" 1000
      And the error body has no success members

      Examples:
        | value    |
        | 0        |
        | -1       |
        | 1001     |
        | 5000     |
        | 1.5      |
        | 1e2      |
        | "10"     |
        | null     |
        | (absent) |

    @negative @property
    Scenario: Every generated pull limit that is not an integer from 1 to 1000 is refused
      When the harness client "H" sends 25 pull requests whose "limit" is drawn by fast-check from JSON values that are not an integer from 1 to 1000
      Then every one of those pulls is answered 400 with error code "invalid_request" and no other member

    Scenario Outline: A pull with limit <value> is accepted and honoured
      Given the server table "tasks" gains 1001 rows owned by "alice"
      When the harness client "H" sends a valid pull request with member "limit" set to <value>
      Then the response status is 200
      And member "changes" holds <value> changes and member "has_more" is true

      Examples:
        | value |
        | 1     |
        | 1000  |

    @negative
    Scenario Outline: A rebuild with limit <value> is refused
      When the harness client "H" sends a first rebuild request for scope "user:alice" with member "limit" set to <value>
      Then the response status is 400 with error code "invalid_request"
      And the error body has no success members

      Examples:
        | value    |
        | 0        |
        | -1       |
        | 1001     |
        | 1.5      |
        | "10"     |
        | null     |
        | (absent) |

    @negative
    Scenario: A rebuild continuation may not change the attempt's limit
      Given the server table "tasks" gains 5 rows owned by "alice"
      And the harness client "H" has requested page 1 of a rebuild of "user:alice" with limit 2 and rebuild ID "3f7e2a10-9c4b-4d2e-8a61-5b0d9e4c7a21"
      When the harness client "H" requests the next page of that rebuild with limit 3
      Then the response status is 400 with error code "invalid_request"
      And the error body has no success members

    @negative @cap:scopes
    Scenario: A pull refused for its limit does no assignment work
      Given user "alice" is assigned scope "team:t_1"
      When the harness client "H" sends a valid pull request with member "limit" set to 0
      Then the response status is 400 with error code "invalid_request"
      When the harness client "H" sends a valid pull request with member "limit" set to 100
      Then member "scope_set_version" is one more than the version "H" held before the refused pull
      And member "scope_updates.add" is [{"cursor":null,"id":"team:t_1"}]

  Rule: Push byte and count limits fail before ledger allocation or semantic work

    @negative
    Scenario Outline: A push over the <limit> limit is refused with no ledger entry
      When the harness client "H" pushes batch "5a4f8e02-6b1d-4c3a-9e7f-2d8b0c6a1f34" built as <batch>
      Then the response status is 400 with error code "invalid_request"
      And the server table "tasks" is unchanged
      When the harness client "H" pushes batch "5a4f8e02-6b1d-4c3a-9e7f-2d8b0c6a1f34" holding one valid insert of task "t-ok"
      Then the response status is 200
      And the push response lists the insert of "t-ok" as "applied"

      Examples:
        | limit            | batch                                                                                        |
        | mutation count   | an empty "mutations" array                                                                   |
        | mutation count   | 1001 valid inserts                                                                           |
        | body bytes       | 20 valid inserts padded with insignificant whitespace to exactly 1,048,577 octets            |
        | mutation bytes   | one insert whose normalized mutation in RFC 8785 form is 65,537 octets                       |

    Scenario Outline: A push exactly at the <limit> limit is executed
      When the harness client "H" pushes a batch built as <batch>
      Then the response status is 200
      And every mutation of the batch has exactly one outcome

      Examples:
        | limit           | batch                                                                         |
        | mutation count  | 1000 valid inserts                                                            |
        | body bytes      | valid inserts padded with insignificant whitespace to exactly 1,048,576 octets |
        | mutation bytes  | one insert whose normalized mutation in RFC 8785 form is 65,536 octets        |

    @negative
    Scenario: A mutation authoring 257 columns is refused and 256 are accepted
      Given a registered table "wide" with a string key "id" and 300 nullable string columns "c001" to "c300"
      And table "wide" places each row in scope "user:alice"
      And the harness client "H" has connected again to install the new manifest
      When the harness client "H" pushes a batch with one insert into "wide" authoring 257 columns
      Then the response status is 400 with error code "invalid_request"
      When the harness client "H" pushes a batch with one insert into "wide" authoring 256 columns
      Then the response status is 200

  Rule: Administrative limits are positive and an invalid value is refused, never defaulted

    @negative @cap:compaction @cap:sourceSql @cap:inspect
    Scenario Outline: Compaction with batch size <value> is refused before deleting anything
      Given the server table "tasks" gains 3 rows owned by "alice"
      And the harness client "H" has pulled and acknowledged every change
      When the operator runs compaction with batch size <value>
      Then the operation fails with SQLSTATE "22023"
      And no effect was deleted and no resume floor moved

      Examples:
        | value |
        | 0     |
        | -1    |
        | NULL  |

    @negative @cap:provision @cap:sourceSql @cap:inspect
    Scenario Outline: Registering <setting> <value> is refused with reason "invalid_limit"
      When the operator registers table "projects" with <setting> <value>
      Then the operation fails with "invalid_registration" and reason "invalid_limit"
      And no new active registry generation exists

      Examples:
        | setting          | value |
        | max_scope_fanout | 0     |
        | max_scope_fanout | -3    |
        | max_impact_rows  | 0     |

    @negative @cap:provision @cap:inspect
    Scenario Outline: Setting backfill batch size <value> is refused
      When the operator starts a staged membership backfill with batch size <value>
      Then the operation fails with SQLSTATE "22023"
      And the active registry generation is unchanged

      Examples:
        | value |
        | 0     |
        | -1    |

    @negative @cap:scopes @cap:sourceSql
    Scenario Outline: An assignment function bound of <value> is refused
      When the operator registers assignment function "public.project_scopes" with bound <value>
      Then the operation fails with SQLSTATE "22023"
      And the registered assignment function is unchanged

      Examples:
        | value |
        | 0     |
        | -1    |
        | 1001  |

  Rule: A runtime result over its bound blocks instead of being truncated

    @negative @cap:provision @cap:sourceSql @cap:capture
    Scenario: A row whose scope set exceeds the fanout bound blocks capture
      Given a registered table "posts" with a string key "id" and a string column "team_ids"
      And table "posts" places each row in one scope "team:{id}" for each comma-separated id in "team_ids"
      And table "posts" is registered with max_scope_fanout 2
      And the harness client "H" has connected again to install the new manifest
      When the harness commits on the source database:
        """
        INSERT INTO public.posts (id, team_ids) VALUES ('p-1', 't_1,t_2,t_3');
        """
      And the capture worker completes 1 polls
      And the harness client "H" pulls presenting its current cursors
      Then the response status is 503 with error code "temporary_unavailable"
      And the error body has "reason" "capture_blocked" and "retryable" true
      And the response carries a "Retry-After" header
