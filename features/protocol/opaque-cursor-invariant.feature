@SYNC-PROTO-003 @server @client
Feature: Opaque Cursor Invariant
  A cursor is the server's word about where one scope of one client stands.
  Its meaning lives entirely on the server: the client keeps the exact string,
  hands it back under the same scope, and never reads, compares, trims,
  re-encodes or invents one. JSON null is the only cursor value with a meaning
  on the client side, and it means "no resumable state, rebuild". In return
  the server trusts no presented token until it has authenticated it and
  checked every binding (user, client, client generation, scope, schema,
  generations); a forged or misbound token is a whole-request
  400 invalid_request that names no failed check and processes no scope.

  On the client side the proxy replaces the cursors the server issues with
  aliases chosen to trip a client that parses or orders them (digits whose
  numeric order runs backwards, spaces at both ends, JSON escapes, a combining
  accent, 4096 octets), maps them back when presented, and checks that the
  client presented exactly the latest alias for the same scope. Aliases in
  tables are JSON string literals. On the server
  side the harness presents altered and foreign tokens and expects refusal.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  @cap:provision
  Rule: a client preserves each non-null server-issued cursor byte for byte

    Scenario Outline: an unusual cursor comes back exactly as it was issued
      Given the proxy aliases the cursors issued to client "A" for scope "user:alice" in issue order:
        | alias   |
        | <alias> |
      When client "A" syncs
      And client "A" syncs
      Then client "A" presented the cursor <alias> for scope "user:alice" in its last pull request
      And the raw bytes of that cursor in the request equal the raw bytes the proxy issued

      Examples:
        | alias                                    | trap                                   |
        | "  padded cursor  "                      | leading and trailing spaces            |
        | "quote\"and\\\\backslash"                | JSON escapes that must survive         |
        | "cafe\u0301"                             | decomposed accent, no normalisation    |
        | "AAAA===="                               | looks like padded base64               |
        | "0"                                      | looks like a number                    |

    Scenario: a 4096-octet cursor is kept whole
      Given the proxy aliases the cursors issued to client "A" for scope "user:alice" with one alias made of the letter "x" repeated 4096 times
      When client "A" syncs
      And client "A" syncs
      Then client "A" presented that 4096-octet alias for scope "user:alice" in its last pull request

    Scenario: every cursor a client presents was issued to it for that same scope
      Given user "alice" is assigned scope "project:p1"
      When client "A" syncs
      And client "A" syncs
      Then every non-null cursor in every pull request client "A" sent equals a cursor the server issued to client "A" for the same scope
      And no rebuild request of client "A" carries an incremental cursor in "/cursor"

  @cap:provision
  Rule: a client does not parse, order, alter or give meaning to a cursor

    @negative
    Scenario: the latest cursor is presented even when it sorts lower than an earlier one
      Given the proxy aliases the cursors issued to client "A" for scope "user:alice" in issue order:
        | alias      |
        | "cursor-9" |
        | "cursor-10"|
        | "a"        |
      When client "A" syncs
      And client "A" syncs
      And client "A" syncs
      And client "A" syncs
      Then the cursors client "A" presented for scope "user:alice" in its pull requests were, in order:
        | cursor      |
        | "cursor-9"  |
        | "cursor-10" |
        | "a"         |

    @negative
    Scenario: two scopes given the same cursor text keep separate cursors
      Given user "alice" is assigned scope "project:p1"
      And client "A" has synced
      And the proxy issues the alias "same-text" for every cursor issued to client "A" in the next pull response
      When client "A" syncs
      And client "A" syncs
      Then client "A" presented the cursor "same-text" for scope "user:alice" in its last pull request
      And client "A" presented the cursor "same-text" for scope "project:p1" in its last pull request
      And the proxy translated each presented cursor back to the token issued for its own scope

  @cap:provision
  Rule: null means there is no usable resumable state

    Scenario: a scope whose cursor the server replaced by null is rebuilt, not resumed
      Given the proxy will set "/scope_cursor_updates/user:alice" to null in the next connect response to client "A"
      When client "A" is stopped, started again and syncs
      Then client "A" sent a rebuild request for scope "user:alice" with "/cursor" equal to null
      And no pull request of client "A" presented a non-null cursor for scope "user:alice" before that rebuild completed

    Scenario: a server answers a null pull cursor with a rebuild requirement and no progress for that scope
      Given client "A" has pushed an insert of row "t-1" and holds its server version
      And capture has materialized every committed source transaction
      When client "A" sends its next pull request with "/scopes/user:alice/cursor" set to null
      Then the response status is 200
      And the response member "/rebuild" contains "user:alice"
      And the response has no member "/scope_cursors/user:alice"
      And the pull response lists no change for scope "user:alice"

  @cap:provision
  Rule: the server authenticates every non-null token before using it

    @negative
    Scenario Outline: an altered incremental cursor is refused with a generic 400
      Given client "A" holds a valid cursor for scope "user:alice"
      When client "A" pulls presenting that cursor <alteration>
      Then the response status is 400 with error code "invalid_request"
      And the error body has exactly the members "code", "message" and "retryable"
      And the response has no member "/changes" and no member "/scope_cursors"
      And the error message does not contain the presented cursor

      Examples:
        | alteration                                                  |
        | with the character at its middle position replaced          |
        | with the character ten positions before its end replaced    |
        | with its last character removed                             |
        | with ".x" appended                                          |
        | replaced by the empty string ""                             |
        | replaced by the JSON string "null"                          |

    @negative
    Scenario Outline: an altered rebuild continuation is refused with a generic 400
      Given client "A" holds an intermediate rebuild continuation for scope "user:alice" with limit 1
      When client "A" requests the next rebuild page presenting that continuation <alteration>
      Then the response status is 400 with error code "invalid_request"
      And the response has no member "/records" and no member "/final_scope_cursor"

      Examples:
        | alteration                                         |
        | with the character at its middle position replaced |
        | with its last character removed                    |
        | with ".x" appended                                 |

  @cap:provision
  Rule: the server refuses a forged or misbound token

    @negative
    Scenario Outline: a genuine token presented in the wrong context is refused
      Given client "B" of user "<holder>" has connected and rebuilt every assigned scope
      And user "alice" is assigned scope "project:p1"
      And client "A" has pulled and holds cursors for scopes "user:alice" and "project:p1"
      When <presenter> pulls presenting <token> under scope "<scope>"
      Then the response status is 400 with error code "invalid_request"
      And no scope cursor of client "A" advanced

      Examples:
        | holder | presenter  | token                                          | scope      |
        | alice  | client "B" | the cursor client "A" holds for "user:alice"   | user:alice |
        | bob    | client "B" | the cursor client "A" holds for "user:alice"   | user:bob   |
        | alice  | client "A" | the cursor client "A" holds for "project:p1"   | user:alice |
        | alice  | client "A" | a rebuild continuation client "A" holds        | user:alice |

    @negative
    Scenario: one forged cursor beside a valid one fails the whole pull
      Given user "alice" is assigned scope "project:p1"
      And client "A" has pulled and holds cursors for scopes "user:alice" and "project:p1"
      When client "A" pulls presenting its cursor for "project:p1" unchanged and its cursor for "user:alice" with the character at its middle position replaced
      Then the response status is 400 with error code "invalid_request"
      And no scope cursor of client "A" advanced

    @negative
    Scenario: an incremental cursor presented as a rebuild continuation is refused
      Given client "A" holds a valid cursor for scope "user:alice"
      When client "A" presents that cursor as the continuation of a rebuild request for scope "user:alice"
      Then the response status is 400 with error code "invalid_request"
      And the response has no member "/records"
