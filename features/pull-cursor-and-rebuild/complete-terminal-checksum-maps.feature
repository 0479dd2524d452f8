@SYNC-PULL-018 @server @client
Feature: Complete Terminal Checksum Maps
  The "checksums" member belongs only on the terminal page of a drain. A page
  with "has_more": true has no "checksums" member at all, not even {}. A page
  with "has_more": false has a map whose keys are exactly the client's active
  scope set after this response's "scope_updates": scopes just added and
  scopes listed in "rebuild" are in it, scopes just removed are not, and each
  value is a four-member checksum object for that scope at this response's
  schema and boundary. A client rejects a terminal map with a missing key, an
  extra key or a malformed entry as a whole: nothing of the page is applied
  and no cursor moves. An incomplete map would let a scope go unverified; an
  extra one would make the client believe in a scope it does not have.

  The server side is checked by draining pulls and changing assignment, the
  client side by damaging the map in flight through the proxy.

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
      INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-1', 'a', NULL, 'one'), ('u-1', 'b', NULL, 'uno'), ('c-1', 'c', NULL, 'ce');
      """

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: a page with has_more true omits checksums entirely

    @negative
    Scenario: only the last page of a drain carries checksums
      Given the harness client "H" of user "alice" has completed a sync
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-2', 'a', NULL, 'two'), ('u-2', 'b', NULL, 'dos'), ('t-3', 'a', NULL, 'three');
        """
      When the harness client "H" pulls with limit 1 until "has_more" is false
      Then the drain took 3 pull responses
      And no response of the drain except the last has a member "checksums"
      And the last response of the drain has member "/checksums" with exactly the keys "list:a" and "list:b"

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: a terminal map's keys are exactly the active scope set after the scope updates

    @negative
    Scenario: an added scope is keyed even though it must rebuild, and a removed scope is not keyed
      Given the harness client "H" of user "alice" has completed a sync
      And user "alice" is assigned scope "list:c"
      When the harness client "H" pulls with limit 10 presenting its current cursors
      Then the response member "/scope_updates/add" equals [{"id":"list:c","cursor":null}]
      And member "rebuild" is ["list:c"]
      And the response has member "/checksums" with exactly the keys "list:a", "list:b" and "list:c"
      And the value of "/checksums/list:c" equals the scope digest the harness codec computes for scope "list:c" holding exactly row "c-1" at its current version
      When the operator revokes scope "list:b" from user "alice"
      And the harness client "H" pulls with limit 10 presenting its current cursors
      Then the response member "/scope_updates/remove" equals ["list:b"]
      And the response has member "/checksums" with exactly the keys "list:a" and "list:c"

    @negative
    Scenario: a scope presented with a null cursor is in rebuild and still keyed
      Given the harness client "H" of user "alice" has completed a sync
      When the harness client "H" pulls with limit 10 presenting cursor null for scope "list:a"
      Then member "rebuild" is ["list:a"]
      And the response has member "/checksums" with exactly the keys "list:a" and "list:b"
      And each value of "/checksums" equals the scope digest the harness computes from the rows "H" holds for that scope

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: a client rejects a terminal map with a missing, extra or malformed entry, without applying anything or moving any cursor

    @negative
    Scenario Outline: a structurally wrong terminal map fails the whole page
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And client "A" syncs
      And the harness has recorded the cursors client "A" inspects as "old"
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-5', 'a', NULL, 'five'), ('u-5', 'b', NULL, 'cinco');
        """
      And the proxy will <fault> in the next pull response to client "A"
      When client "A" syncs
      Then the sync of client "A" ends with completion "error"
      And client "A" reports state "error" with a non-retryable failure of operation "pulling"
      And no scope cursor of client "A" advanced
      And querying "SELECT id FROM tasks WHERE id IN ('t-5', 'u-5')" on client "A" returns no row

      Examples:
        | fault                                                         |
        | remove "/checksums/list:b"                                    |
        | set "/checksums/list:zzz" to the value of "/checksums/list:a" |
        | set "/checksums/list:a/version" to 2                          |
        | set "/checksums/list:a/digest" to its upper-case form         |
        | set "/checksums/list:a/algorithm" to "sha-256"                |
        | set "/checksums/list:a/note" to "extra"                       |
        | remove "/checksums/list:a/encoding"                           |
        | set "/checksums/list:a" to "not an object"                    |
        | remove "/checksums"                                           |

    @negative
    Scenario: a checksums member on a page with has_more true fails the whole page
      Given client "A" of user "alice" is opened with pull limit 1
      And client "A" has connected and rebuilt every assigned scope
      And client "A" syncs
      And the harness has recorded the cursors client "A" inspects as "old"
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-5', 'a', NULL, 'five'), ('u-5', 'b', NULL, 'cinco');
        """
      And the proxy will set "/checksums" to {} in the next pull response to client "A"
      When client "A" syncs
      Then the proxy recorded that the rewritten pull response had "/has_more" true
      And the sync of client "A" ends with completion "error"
      And no scope cursor of client "A" advanced
      And querying "SELECT id FROM tasks WHERE id IN ('t-5', 'u-5')" on client "A" returns no row

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: a well-formed entry with a wrong digest withholds that scope's cursor and marks it for rebuild

    @negative
    Scenario: an entry bound to another scope is caught by verification
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And client "A" syncs
      And the harness has recorded the cursors client "A" inspects as "old"
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-5', 'a', NULL, 'five');
        """
      And the proxy will set "/checksums/list:a" to the value of "/checksums/list:b" in the next pull response to client "A"
      When client "A" syncs
      And client "A" syncs
      Then no pull request client "A" sent after the damaged pull response presented for scope "list:a" the cursor that response issued for it
      And client "A" sent a rebuild request for scope "list:a" after the damaged pull response
      And the sync of client "A" ends with completion "idle"
      And client "A" reports scope "list:a" as not requiring rebuild, with the final rebuild cursor installed
