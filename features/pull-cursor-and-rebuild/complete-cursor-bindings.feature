@SYNC-PULL-008 @server
Feature: Complete Cursor Bindings
  An incremental cursor is only safe to resume from if the server can prove it
  issued that exact token to this user and client, for this client generation
  and scope, under this schema, membership, retention and stream lineage, at a
  stated position and issue time, under a known signing key. The MAC covers
  all of those fields, and the server checks it in constant time before it
  trusts any field. Two failures must stay apart. A token that authenticates
  but describes state that is no longer current is stale: the pull succeeds
  (200), lists the scope in "rebuild", issues it no cursor and acknowledges
  nothing for it, while other scopes are served. A token that does not
  authenticate, or authenticates for another user, client, scope or token
  kind, is forged or misbound: the whole pull is a 400 invalid_request that
  processes no scope and does not say which check failed.

  The harness alters genuine tokens byte by byte, carries them into foreign
  contexts, and makes genuine tokens stale through operator controls, then
  checks the status, the body and what was acknowledged.

  Background:
    Given a registered table "tasks" with columns:
      | column  | type   | nullable | key |
      | id      | string | false    | yes |
      | list_id | string | false    | no  |
      | title   | string | false    | no  |
    And a registered table "notes" with columns:
      | column   | type   | nullable | key |
      | id       | string | false    | yes |
      | board_id | string | false    | no  |
      | body     | string | false    | no  |
    And table "tasks" places each row in scope "list:{list_id}"
    And table "notes" places each row in scope "board:{board_id}"
    And the default scope of user "alice" is revoked
    And user "alice" is assigned scope "list:a"
    And user "alice" is assigned scope "board:b"
    And the harness has committed and capture has materialized:
      """
      INSERT INTO public.tasks (id, list_id, title) VALUES ('t-0', 'a', 'zero');
      INSERT INTO public.tasks (id, list_id, title) VALUES ('t-1', 'a', 'one');
      INSERT INTO public.notes (id, board_id, body) VALUES ('n-1', 'b', 'note one');
      """
    And the harness client "H" of user "alice" has completed a sync
    And the harness has recorded the cursors of "H" as "old"

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: a token altered in any way is refused as forged, with a generic body and no scope processed

    @negative
    Scenario Outline: an altered incremental cursor fails the whole pull
      Given the harness client "H" has sent a pull with limit 10 presenting the cursor "not-a-token" for scope "list:a" and recorded the error body as "generic"
      When the harness client "H" pulls with limit 10 presenting for scope "list:a" the "old" cursor <alteration>
      Then the response status is 400 with error code "invalid_request"
      And the error body has "retryable" false
      And the error body is byte-identical to the "generic" error body
      And the error body does not contain any 8-character substring of the presented token
      And the response has no member "/changes" and no member "/scope_cursors"

      Examples:
        | alteration                                                   |
        | with its last character replaced by another base64url one    |
        | with the character at its middle position replaced           |
        | with its last 8 characters removed                           |
        | with ".x" appended                                           |
        | replaced by the empty string ""                              |
        | replaced by a rebuild continuation of "list:a" issued to "H" |
        | replaced by the "old" cursor for scope "board:b"             |

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: a genuine token presented outside the user, client or scope it was bound to is refused as misbound

    @negative
    Scenario Outline: a token carried into another context fails the whole pull
      Given user "bob" is assigned scope "list:a"
      And the harness client "H2" of user "alice" has completed a sync
      And the harness client "B" of user "bob" has completed a sync
      When the harness client "<presenter>" pulls with limit 10 presenting for scope "list:a" the "old" cursor that "H" holds for scope "list:a"
      Then the response status is 400 with error code "invalid_request"
      And the response has no member "/changes" and no member "/scope_cursors"

      Examples:
        | presenter | context that differs      |
        | H2        | client, same user         |
        | B         | user, same assigned scope |

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: an authentic token whose state is no longer current is stale: a 200 with the scope in "rebuild"

    @cap:inspect
    Scenario: a membership rule change makes only the affected scope stale
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.notes (id, board_id, body) VALUES ('n-2', 'b', 'note two');
        INSERT INTO public.tasks (id, list_id, title) VALUES ('t-h', 'a', 'hidden');
        """
      And server inspection records the checkpoints of "H" as "before"
      When the operator changes the membership rule of table "tasks" so that rows titled "hidden" belong to no scope
      And the harness client "H" pulls with limit 10 presenting the "old" cursors
      Then the response status is 200
      And member "rebuild" is ["list:a"]
      And the response has no member "/scope_cursors/list:a"
      And the pull response lists no change for scope "list:a"
      And the pull response lists exactly these changes:
        | scope   | table | op     | pk  |
        | board:b | notes | upsert | n-2 |
      And the response has member "/scope_cursors/board:b"
      When the harness client "H" pulls with limit 10 presenting its current cursors
      Then server inspection shows the checkpoint of "H" for scope "board:b" at the position of the cursor issued for "board:b" in the previous response
      And server inspection shows the checkpoint of "H" for scope "list:a" equal to the "before" one

    @cap:compaction
    Scenario: a cursor below the scope's compacted retention floor is stale
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, title) VALUES ('t-2', 'a', 'two');
        """
      And the harness client "H" has pulled with limit 10 presenting the "old" cursors
      And the harness client "H" has pulled presenting its current cursors
      And the operator compacts scope "list:a"
      When the harness client "H" pulls with limit 10 presenting cursor "old" for scope "list:a"
      Then the response status is 200
      And member "rebuild" is ["list:a"]
      And the response has no member "/scope_cursors/list:a"
      And the response has member "/scope_cursors/board:b"

    Scenario: a stream reset makes every scope stale, and the pull is still a 200
      When the operator runs an authorized stream reset to completion
      And the harness client "H" pulls with limit 10 presenting the "old" cursors
      Then the response status is 200
      And member "rebuild" is ["board:b", "list:a"] in any order
      And member "scope_cursors" is {}

    @cap:clients
    Scenario: a cursor from an earlier client generation is stale after the client reconnects
      When the operator expires the client generation of client "H"
      And the harness client "H" connects presenting its installed schema
      And the harness client "H" pulls with limit 10 under its new client generation presenting the "old" cursors
      Then the response status is 200
      And member "rebuild" is ["board:b", "list:a"] in any order
      And member "scope_cursors" is {}

    @cap:schema
    Scenario: a cursor issued under the previous schema is stale at pull, even after connect
      When the operator publishes a "class_2" manifest that adds nullable column "note" of type "string" to table "tasks"
      And the harness client "H" connects presenting its installed schema and its cursors
      And the harness client "H" pulls with limit 10 under the new schema presenting the "old" cursors
      Then the response status is 200
      And the response member "/rebuild" contains "list:a"
      And the response has no member "/scope_cursors/list:a"

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture @cap:inspect
  Rule: stale and forged stay distinct when they meet in one request

    @negative
    Scenario: a stale token beside a forged one still fails the whole pull and acknowledges nothing
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, title) VALUES ('t-h', 'a', 'hidden');
        """
      And the harness client "H" has pulled presenting its current cursors
      And the harness has recorded the cursors of "H" as "acked"
      And the harness client "H" has pulled presenting the "acked" cursors
      And the operator changes the membership rule of table "tasks" so that rows titled "hidden" belong to no scope
      When the harness client "H" pulls with limit 10 presenting the "acked" cursor for scope "list:a" and, for scope "board:b", the "acked" cursor with the character at its middle position replaced
      Then the response status is 400 with error code "invalid_request"
      And server inspection shows the checkpoint of "H" for scope "board:b" at the position of cursor "acked"
      And server inspection shows the checkpoint of "H" for scope "list:a" at the position of cursor "acked"
