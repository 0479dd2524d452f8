@SYNC-PULL-021 @server @client
Feature: First Sync Uses Rebuild Semantics
  A scope the client has never materialized, or whose cursor is null, has no
  incremental state to continue from. Its first contents come through exactly
  the same path as a repair: an authenticated, paged rebuild of a staged
  snapshot, verified against the snapshot digest, ending with a final cursor
  that the next pull presents. The server never serves a null-cursor scope
  incrementally (for example by streaming history from the start), and the
  client never installs rows, a cursor or a checksum for such a scope outside
  that contract. A special first-sync path would be a second, less tested way
  to fill a scope, and it would skip the digest check exactly when the client
  knows least.

  The harness presents null cursors to the server directly, and watches a
  fresh client's first sync through the proxy, including a first sync whose
  snapshot digest is damaged in flight.

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
      INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-1', 'a', NULL, 'one'), ('t-2', 'a', NULL, 'two'), ('t-3', 'a', NULL, 'three'), ('u-1', 'b', NULL, 'uno');
      """

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: the server never resumes a scope that has no usable cursor

    @negative
    Scenario: a null cursor gets a rebuild requirement and no rows, while other scopes are served
      Given the harness client "H" of user "alice" has completed a sync
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-4', 'a', NULL, 'four'), ('u-2', 'b', NULL, 'dos');
        """
      When the harness client "H" pulls with limit 10 presenting cursor null for scope "list:a"
      Then the response status is 200
      And member "rebuild" is ["list:a"]
      And the response has no member "/scope_cursors/list:a"
      And the pull response lists no change for scope "list:a"
      And the pull response lists exactly these changes:
        | scope  | table | op     | pk  |
        | list:b | tasks | upsert | u-2 |

    @negative
    Scenario: a newly assigned scope arrives with a null cursor and no rows
      Given the harness client "H" of user "alice" has completed a sync
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('c-1', 'c', NULL, 'ce'), ('c-2', 'c', NULL, 'ce dos');
        """
      And user "alice" is assigned scope "list:c"
      When the harness client "H" pulls with limit 10 presenting its current cursors
      Then the response member "/scope_updates/add" equals [{"id":"list:c","cursor":null}]
      And member "rebuild" is ["list:c"]
      And the response has no member "/scope_cursors/list:c"
      And the pull response lists no change for scope "list:c"

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: first materialization runs the same authenticated, snapshot-bound, digest-verified rebuild

    Scenario: the server's first contents for a scope come from a verified snapshot whose final cursor then resumes
      Given the harness client "H" of user "alice" has connected
      When the harness client "H" requests page 1 of a rebuild of "list:a" with limit 2 and rebuild ID "7e28593e-3b45-4d6e-8f90-ab1c2d3e4f51"
      And the harness client "H" requests the remaining rebuild pages of "list:a"
      Then the rebuild pages hold exactly these records:
        | table | pk  |
        | tasks | t-1 |
        | tasks | t-2 |
        | tasks | t-3 |
      And the final rebuild page has "checksum" equal to the scope digest the harness codec computes for scope "list:a" from those records
      When the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-4', 'a', NULL, 'four');
        """
      And the harness client "H" pulls presenting the "final_scope_cursor" for "list:a" and cursor null for "list:b"
      Then the pull response lists exactly these changes:
        | scope  | table | op     | pk  |
        | list:a | tasks | upsert | t-4 |
      And member "rebuild" is ["list:b"]

    Scenario: a fresh client fills each scope through rebuild before it pulls that scope
      When client "A" of user "alice" syncs for the first time
      Then the sync of client "A" ends with completion "idle"
      And for each of "list:a" and "list:b", client "A" sent a rebuild request with "cursor" null and a lowercase UUID "rebuild_id" before any pull request that presented a non-null cursor for that scope
      And the first pull request of client "A" that presented a non-null cursor for "list:a" presented the "final_scope_cursor" of the rebuild of "list:a"
      And no pull response to client "A" carried a change for scope "list:a" or "list:b"
      And querying "SELECT id, title FROM tasks ORDER BY id" on client "A" returns:
        | id  | title |
        | t-1 | one   |
        | t-2 | two   |
        | t-3 | three |
        | u-1 | uno   |
      And for scopes "list:a" and "list:b", the checksum client "A" inspects equals the "checksum" of that scope's final rebuild page

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: a client never installs unverified first-sync state

    @negative
    Scenario: a first sync whose snapshot digest does not verify installs no cursor and starts over
      Given client "A" of user "alice" is opened with rebuild limit 2
      And the proxy will flip one hex digit of "/checksum/digest" in the next final rebuild response for scope "list:a" to client "A"
      When client "A" syncs
      Then the proxy recorded two rebuild attempts of scope "list:a" from client "A", each starting with "cursor" null and with different "rebuild_id" values
      And no pull request of client "A" presented the "final_scope_cursor" of the first attempt
      And the checksum client "A" inspects for scope "list:a" equals the "checksum" of the second attempt's final page

    @negative @cap:crash
    Scenario: a fresh client killed during its first rebuild has no cursor for the scope after restart
      Given client "A" of user "alice" is opened with rebuild limit 2
      And client "A" is armed to crash at "after_rebuild_page_commit" for scope "list:a"
      When client "A" syncs
      Then client "A" has crashed
      When the harness restarts client "A"
      Then client "A" reports scope "list:a" as requiring rebuild, with no cursor and no checksum installed
      When client "A" syncs
      Then the sync of client "A" ends with completion "idle"
      And client "A" reports scope "list:a" as not requiring rebuild, with the final rebuild cursor installed
