@SYNC-PULL-006 @client
Feature: Per-Scope Cursor Correctness
  A client keeps one cursor per scope, and that cursor is its promise that
  everything the server sent for the scope up to that point is safely in the
  local database. So the client installs a scope's new cursor only in the same
  local transaction that applies every change of the page for that scope, and
  only after the whole page passed validation. A cursor saved before the rows
  are durable would, after a crash, skip changes the user never got; a cursor
  moved because some other scope progressed (one global checkpoint, or one
  scope's token copied to another) would skip that scope's own changes.

  The harness drives a client through the proxy, kills it at the client's
  crash points, corrupts pull pages in flight, and compares what the client
  inspects (cursors per scope, local rows) with what the server issued.

  Background:
    Given a registered table "tasks" with columns:
      | column    | type   | nullable | key |
      | id        | string | false    | yes |
      | list_id   | string | false    | no  |
      | also_list | string | true     | no  |
      | title     | string | false    | no  |
    And table "tasks" places each row in scope "list:{list_id}"
    And the default scope of user "alice" is revoked
    And user "alice" is assigned scope "list:a"
    And user "alice" is assigned scope "list:b"
    And the harness has committed and capture has materialized:
      """
      INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-1', 'a', NULL, 'one'), ('u-1', 'b', NULL, 'uno');
      """

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture @cap:crash
  Rule: a scope cursor advances only after that scope's outcomes are validated and durably applied

    @negative
    Scenario Outline: a crash before the page is committed leaves every cursor where it was
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And client "A" syncs
      And the harness has recorded the cursors client "A" inspects as "old"
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-2', 'a', NULL, 'two'), ('u-2', 'b', NULL, 'dos');
        """
      And client "A" is armed to crash at "<point>"
      When client "A" syncs
      Then client "A" has crashed
      When the harness restarts client "A"
      Then no scope cursor of client "A" advanced
      And querying "SELECT id, title FROM tasks ORDER BY id" on client "A" returns:
        | id  | title |
        | t-1 | one   |
        | u-1 | uno   |
      When client "A" syncs
      Then the sync of client "A" ends with completion "idle"
      And querying "SELECT id, title FROM tasks ORDER BY id" on client "A" returns:
        | id  | title |
        | t-1 | one   |
        | t-2 | two   |
        | u-1 | uno   |
        | u-2 | dos   |
      And for every scope, the cursor client "A" inspects equals the last cursor the server issued to it for that scope

      Examples:
        | point                        |
        | after_pull_response_received |
        | inside_pull_apply            |

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: a page that fails validation advances no cursor and applies nothing

    @negative
    Scenario Outline: an invalid change anywhere in the page keeps all cursors and rows unchanged
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And client "A" syncs
      And the harness has recorded the cursors client "A" inspects as "old"
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-2', 'a', NULL, 'two'), ('u-2', 'b', NULL, 'dos');
        """
      And the proxy will <fault> in the next pull response to client "A"
      When client "A" syncs
      Then the sync of client "A" ends with completion "error"
      And no scope cursor of client "A" advanced
      And querying "SELECT id, title FROM tasks ORDER BY id" on client "A" returns:
        | id  | title |
        | t-1 | one   |
        | u-1 | uno   |

      Examples:
        | fault                                                             |
        | flip one hex digit of "/changes/0/row_checksum/digest"            |
        | set "/changes/0/row/id" to "t-999" and recompute its row checksum |
        | remove "/changes/0/row/title" and recompute its row checksum      |
        | set "/changes/0/scope" to "list:zzz"                              |
        | remove "/changes/1/server_version"                                |

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture @cap:crash
  Rule: a scope's cursor moves only with that scope's own outcomes

    @negative
    Scenario: a committed page moves the cursor of the scope it served and no other
      Given client "A" of user "alice" is opened with pull limit 1
      And client "A" has connected and rebuilt every assigned scope
      And client "A" syncs
      And the harness has recorded the cursors client "A" inspects as "old"
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-2', 'a', NULL, 'two');
        """
      And the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('u-2', 'b', NULL, 'dos');
        """
      And capture has materialized every committed source transaction
      And client "A" is armed to crash at "after_pull_apply_commit"
      When client "A" syncs
      Then client "A" has crashed
      And the proxy recorded a pull response to client "A" with "/has_more" true that issued a cursor for "list:a" and none for "list:b"
      When the harness restarts client "A"
      Then the cursor client "A" inspects for scope "list:a" equals the cursor issued for "list:a" in that pull response
      And the cursor client "A" inspects for scope "list:b" equals the "old" one
      And querying "SELECT id, title FROM tasks ORDER BY id" on client "A" returns:
        | id  | title |
        | t-1 | one   |
        | t-2 | two   |
        | u-1 | uno   |

    @negative
    Scenario: a scope without an issued cursor keeps its own cursor instead of borrowing another scope's
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And client "A" syncs
      And the harness has recorded the cursors client "A" inspects as "old"
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('u-2', 'b', NULL, 'dos');
        """
      And the proxy will remove "/scope_cursors/list:a" in the next pull response to client "A"
      When client "A" syncs
      Then the cursor client "A" inspects for scope "list:a" equals the "old" one
      And the cursor client "A" inspects for scope "list:b" equals the cursor issued for "list:b" in that pull response
      When client "A" syncs
      Then the first pull request of that sync presented the "old" cursor for scope "list:a"
