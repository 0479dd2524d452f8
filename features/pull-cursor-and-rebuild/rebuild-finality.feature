@SYNC-PULL-019 @client
Feature: Rebuild Finality
  A rebuild is finished only when all of these hold, and the client records
  completion in the same local transaction as the last of them: every page is
  durably applied; provenance of this scope left over from before the rebuild
  is pruned; rows that no scope justifies any more (and that no pending local
  intent protects) are removed; the digest the client recomputes for the scope
  equals the snapshot "checksum"; and the final cursor and that checksum are
  installed together. Before that point the scope has no usable cursor and
  stays marked for rebuild. A client that declares completion early can keep
  rows the server deleted, lose rows of a page it never committed, or resume
  incrementally from a state the snapshot never described.

  The harness kills the client between the rebuild's commits and inspects it,
  hides a deletion in flight so that only the rebuild can remove the row, and
  damages the final checksum, then checks cursors, checksums, rows,
  provenance and the requests the client sends next.

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
      INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-1', 'a', NULL, 'one'), ('t-2', 'a', NULL, 'two'), ('t-3', 'a', NULL, 'three'), ('t-4', 'a', NULL, 'four'), ('t-5', 'a', NULL, 'five'), ('u-1', 'b', NULL, 'uno');
      """
    And client "A" of user "alice" is opened with rebuild limit 2

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture @cap:crash
  Rule: the rebuild is not complete until every page is durably applied

    @negative
    Scenario: after a crash between pages the scope has no cursor and the same attempt resumes
      Given client "A" is armed to crash at "after_rebuild_page_commit" for scope "list:a"
      When client "A" syncs
      Then client "A" has crashed
      And the proxy recorded exactly one rebuild response for scope "list:a" to client "A", with "has_more" true
      When the harness restarts client "A"
      Then client "A" reports scope "list:a" as requiring rebuild, with no cursor and no checksum installed
      And client "A" inspection shows a rebuild attempt for "list:a" with the "rebuild_id" of that request, page limit 2 and the continuation from that response as its next token
      When client "A" syncs
      Then the sync of client "A" ends with completion "idle"
      And the first rebuild request of client "A" after the restart has the same "rebuild_id" and "limit" as before and "cursor" equal to the continuation from that response
      And the proxy recorded no rebuild request from client "A" for scope "list:a" with "cursor" null after the restart
      And client "A" reports scope "list:a" as not requiring rebuild, with the final rebuild cursor installed

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture @cap:crash
  Rule: the final cursor and checksum are installed atomically with completion

    @negative
    Scenario: a crash just before finality commits leaves nothing final installed, and the same attempt completes
      Given client "A" is armed to crash at "before_rebuild_finality_commit" for scope "list:a"
      When client "A" syncs
      Then client "A" has crashed
      When the harness restarts client "A"
      Then client "A" reports scope "list:a" either as requiring rebuild with no cursor and no checksum installed, or as complete with both the "final_scope_cursor" and the "checksum" of the attempt it was killed in
      When client "A" syncs
      Then the sync of client "A" ends with completion "idle"
      And every rebuild request of client "A" for scope "list:a" after the restart carries the "rebuild_id" used before the crash and a non-null "cursor"
      And the cursor client "A" inspects for scope "list:a" equals the "final_scope_cursor" the proxy recorded for that attempt
      And the checksum client "A" inspects for scope "list:a" equals the "checksum" the proxy recorded for that attempt

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: stale provenance is pruned and unjustified rows are removed before completion

    @negative
    Scenario: a row the server deleted while its delete was lost in transit is gone once the rebuild completes
      Given client "A" has connected and rebuilt every assigned scope
      And client "A" syncs
      And the harness has committed and capture has materialized:
        """
        DELETE FROM public.tasks WHERE id = 't-3';
        """
      And the proxy will remove the change for row "t-3" of scope "list:a" from the next pull response to client "A"
      When client "A" syncs
      Then the proxy recorded a rebuild of scope "list:a" from client "A" starting with "cursor" null
      And no rebuild page the proxy recorded for that attempt holds a record for "t-3"
      And querying "SELECT id FROM tasks WHERE list_id = 'a' ORDER BY id" on client "A" returns:
        | id  |
        | t-1 |
        | t-2 |
        | t-4 |
        | t-5 |
      And client "A" inspection shows no provenance for row "t-3" of table "tasks"
      And client "A" inspection shows no mutation record
      And the checksum client "A" inspects for scope "list:a" equals the "checksum" of the final rebuild page the proxy recorded

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: a snapshot digest mismatch means the rebuild did not complete

    @negative
    Scenario: a final page whose checksum does not match leaves the attempt unfinished and a new one is started
      Given the proxy will flip one hex digit of "/checksum/digest" in the next final rebuild response for scope "list:a" to client "A"
      When client "A" syncs
      Then the proxy recorded two rebuild attempts of scope "list:a" from client "A", each starting with "cursor" null and with different "rebuild_id" values
      And no pull request of client "A" presented the "final_scope_cursor" of the first attempt
      And the checksum client "A" inspects for scope "list:a" equals the "checksum" of the second attempt's final page
