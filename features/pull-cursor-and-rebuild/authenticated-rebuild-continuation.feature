@SYNC-PULL-011 @server
Feature: Authenticated Rebuild Continuation
  A rebuild continuation token is the only way to ask for the next page of a
  staged snapshot, and it is signed over everything that page depends on: the
  common bindings (user, client, client generation, scope, schema, membership,
  retention and stream generations, key, issue time) plus the rebuild session,
  the client's rebuild ID, the snapshot boundary, the next row ordinal, the
  page limit, the accepted-write epoch and an expiry fixed at exactly 24 hours
  after the session was created. A token that was altered, carried to another
  rebuild, scope, client or user, or presented with a different page limit is
  a 400 invalid_request with no records. A genuine token after its expiry is a
  409 rebuild_restart_required. Using a token, or replaying a page, never
  pushes the expiry later.

  The harness starts a rebuild, tampers with and relocates its continuation,
  changes the page size, and moves the server clock around the 24-hour mark.

  Background:
    Given a registered table "tasks" with columns:
      | column  | type   | nullable | key |
      | id      | string | false    | yes |
      | list_id | string | false    | no  |
      | title   | string | false    | no  |
    And table "tasks" places each row in scope "list:{list_id}"
    And the default scope of user "alice" is revoked
    And user "alice" is assigned scope "list:a"
    And user "alice" is assigned scope "list:b"
    And the harness has committed and capture has materialized:
      """
      INSERT INTO public.tasks (id, list_id, title) VALUES ('t-1', 'a', 'one'), ('t-2', 'a', 'two'), ('t-3', 'a', 'three'), ('t-4', 'a', 'four'), ('t-5', 'a', 'five'), ('u-1', 'b', 'uno');
      """
    And the harness client "H" of user "alice" has completed a sync
    And the harness client "H" has requested page 1 of a rebuild of "list:a" with limit 2 and rebuild ID "3f7e2a10-9c4b-4d2e-8a61-5b0d9e4c7a21"

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: a forged or wrong-kind continuation is refused without records

    @negative
    Scenario Outline: an altered continuation is a generic 400
      Given the harness client "H" has sent the next rebuild request of that rebuild with "cursor" set to "not-a-token" and recorded the error body as "generic"
      When the harness client "H" requests the next page of that rebuild presenting its continuation <alteration>
      Then the response status is 400 with error code "invalid_request"
      And the error body has "retryable" false
      And the error body is byte-identical to the "generic" error body
      And the error body does not contain any 8-character substring of the presented token
      And the response has no member "/records", no member "/final_scope_cursor" and no member "/checksum"

      Examples:
        | alteration                                                      |
        | with its last character replaced by another base64url one       |
        | with the character at its middle position replaced              |
        | with its last 8 characters removed                              |
        | with ".x" appended                                              |
        | replaced by the empty string ""                                 |
        | replaced by the incremental cursor "H" holds for scope "list:a" |

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: a continuation is valid only in the rebuild, scope, client and user it was issued for

    @negative
    Scenario Outline: a genuine continuation carried into another context is a 400
      Given user "bob" is assigned scope "list:a"
      And the harness client "H2" of user "alice" has completed a sync
      And the harness client "B" of user "bob" has completed a sync
      And the harness client "H" has requested page 1 of a rebuild of "list:b" with limit 2 and rebuild ID "4a8b2c6d-0e1f-4a3b-9c5d-7e9f1a3b5c72"
      When the harness client "<sender>" sends the next rebuild request of the "list:a" rebuild of "H" with <change>
      Then the response status is 400 with error code "invalid_request"
      And the response has no member "/records", no member "/final_scope_cursor" and no member "/checksum"

      Examples:
        | sender | change                                                           |
        | H      | "rebuild_id" set to "4a8b2c6d-0e1f-4a3b-9c5d-7e9f1a3b5c72"       |
        | H      | "scope" set to "list:b" and "rebuild_id" of the "list:b" rebuild |
        | H      | "rebuild_id" set to "9d3c1b7a-5e2f-4c8d-a1b3-c5d7e9f1a3b5"       |
        | H2     | no other change                                                  |
        | B      | no other change                                                  |

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: the page limit is bound into the token, so a resized continuation is refused

    @negative
    Scenario Outline: presenting a genuine continuation with another limit is a 400
      When the harness client "H" requests the next page of that rebuild with limit <limit>
      Then the response status is 400 with error code "invalid_request"
      And the response has no member "/records"
      When the harness client "H" requests the next page of that rebuild with limit 2
      Then the response status is 200
      And the rebuild pages hold these records on that page:
        | table | pk  |
        | tasks | t-3 |
        | tasks | t-4 |

      Examples:
        | limit |
        | 1     |
        | 3     |
        | 1000  |

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture @cap:clock
  Rule: the rebuild session expires exactly 24 hours after creation and use never extends it

    @negative
    Scenario: uses close to the deadline do not move it
      Given the server clock advances by 23 hours
      And the harness client "H" repeats its request for page 1 of that rebuild
      And the response status is 200
      And the server clock advances by 59 minutes
      When the harness client "H" requests the next page of that rebuild
      Then the response status is 200
      And member "has_more" is true
      When the server clock advances by 1 minute
      And the harness client "H" requests the next page of that rebuild
      Then the response status is 409 with error code "rebuild_restart_required"
      And the error body has "scope_id" equal to "list:a" and "retryable" false
      And the response has no member "/records", no member "/final_scope_cursor" and no member "/checksum"
      When the harness client "H" repeats its request for page 1 of that rebuild
      Then the response status is 409 with error code "rebuild_restart_required"

    Scenario: a new rebuild ID after expiry starts a fresh session with its own 24 hours
      Given the server clock advances by 24 hours
      And the harness client "H" requests the next page of that rebuild
      And the response status is 409 with error code "rebuild_restart_required"
      When the harness client "H" requests page 1 of a rebuild of "list:a" with limit 2 and rebuild ID "5b9c3d7e-1f20-4b4c-8d6e-8f0a2b4c6d83"
      Then the response status is 200
      When the server clock advances by 23 hours
      And the harness client "H" requests the remaining rebuild pages of "list:a"
      Then the final rebuild page has a non-null "final_scope_cursor"
