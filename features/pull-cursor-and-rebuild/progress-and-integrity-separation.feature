@SYNC-PULL-016 @client
Feature: Progress And Integrity Separation
  A valid cursor says only where the client may resume; it says nothing about
  whether the rows the client holds for that scope are right. A scope becomes
  healthy only when the client recomputes the scope digest from its own
  provenance and row digests and finds it equal to an authoritative digest
  from the server (the terminal pull "checksums" entry or the final rebuild
  "checksum"). A client that treats "I have a valid cursor" as "this scope is
  fine" will carry a damaged or incomplete scope forever, because nothing
  after that point will ever look at it again.

  The harness hands the client genuine cursors together with a digest that
  does not match (or no digest at all) and checks that the client installs
  neither the cursor nor a checksum, keeps the scope marked for rebuild, and
  repairs it with a fresh rebuild attempt. It also checks, after a clean
  sync, that the checksum the client reports equals both the server's digest
  and the harness's own recomputation of the client's rows.

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
    And client "A" of user "alice" is opened with rebuild limit 2

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: a valid cursor does not by itself make a scope healthy

    @negative
    Scenario: a genuine final cursor with a wrong snapshot digest is not installed
      Given the proxy will flip one hex digit of "/checksum/digest" in the next final rebuild response for scope "list:a" to client "A"
      When client "A" syncs
      Then the proxy recorded two rebuild attempts of scope "list:a" from client "A", each starting with "cursor" null and with different "rebuild_id" values
      And no pull request of client "A" presented the "final_scope_cursor" of the first attempt
      And the first pull request presenting a cursor for "list:a" presented the "final_scope_cursor" of the second attempt
      And client "A" reports scope "list:a" as not requiring rebuild, with the final rebuild cursor installed
      And the checksum client "A" inspects for scope "list:a" equals the "checksum" of the second attempt's final page

    @negative @cap:crash
    Scenario: between the rejected final page and the new attempt the scope stays unhealthy
      Given the proxy will flip one hex digit of "/checksum/digest" in the next final rebuild response for scope "list:a" to client "A"
      And client "A" is armed to crash at "after_rebuild_attempt_commit" on its second rebuild attempt of "list:a"
      When client "A" syncs
      Then client "A" has crashed
      When the harness restarts client "A"
      Then client "A" reports scope "list:a" as requiring rebuild, with no cursor and no checksum installed
      And the cursor client "A" inspects for scope "list:a" is not the "final_scope_cursor" of the first attempt

    @negative
    Scenario: a final page without its digest never completes the rebuild
      Given the proxy will remove "/checksum" in the next final rebuild response for scope "list:a" to client "A"
      When client "A" syncs
      Then no pull request of client "A" presented the "final_scope_cursor" of the first attempt
      And the cursor client "A" inspects for scope "list:a" is not the "final_scope_cursor" of the first attempt
      And client "A" does not report scope "list:a" as healthy

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: health comes only from an independent, authoritative digest that matches

    Scenario: after a clean sync each scope's verified checksum matches the server and the client's own rows
      When client "A" syncs
      Then the sync of client "A" ends with completion "idle"
      And for scopes "list:a" and "list:b", the checksum client "A" inspects equals the value of that scope in "/checksums" of the last pull response
      And for scopes "list:a" and "list:b", the checksum client "A" inspects equals the scope digest the harness codec computes from the rows, versions and provenance client "A" inspects

    @negative
    Scenario: a digest listed for a scope that must rebuild does not spare it the rebuild
      Given client "A" syncs
      And user "alice" is assigned scope "list:c"
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('c-1', 'c', NULL, 'ce');
        """
      When client "A" syncs
      Then the proxy recorded a pull response to client "A" whose "/rebuild" contains "list:c" and whose "/checksums" has a key "list:c"
      And the proxy recorded a rebuild of scope "list:c" from client "A" starting with "cursor" null
      And querying "SELECT id, title FROM tasks WHERE list_id = 'c'" on client "A" returns:
        | id  | title |
        | c-1 | ce    |
      And client "A" reports scope "list:c" as not requiring rebuild, with the final rebuild cursor installed
