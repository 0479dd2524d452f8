@SYNC-PULL-009 @client
Feature: Scope-Local Rebuild
  A rebuild repairs one scope. It resets that scope's provenance, fetches that
  scope's snapshot and installs that scope's final cursor; every other synced
  scope keeps its rows, provenance, cursor and verified checksum, and tables
  the application keeps only on the device are never touched. A client that
  clears the whole database, or refetches every scope, whenever one scope
  needs repair turns a local fault into a full resync and can destroy data the
  user keeps only locally.

  The harness makes exactly one scope need a rebuild by corrupting that
  scope's terminal checksum in flight, lets the client repair it, and compares
  everything outside that scope with a record taken before, including at the
  client's crash points in the middle of the rebuild. It also reads the proxy
  log to confirm that no other scope was refetched.

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
      INSERT INTO public.tasks (id, list_id, also_list, title) VALUES
        ('t-1', 'a', NULL, 'one'), ('t-2', 'a', NULL, 'two'), ('t-3', 'a', NULL, 'three'),
        ('u-1', 'b', NULL, 'uno'), ('u-2', 'b', NULL, 'dos');
      """
    And client "A" of user "alice" is opened with rebuild limit 1
    And client "A" keeps a local-only table "drafts" with these rows:
      | id  | body          |
      | d-1 | unsent idea   |
      | d-2 | shopping list |
    And client "A" has connected and rebuilt every assigned scope
    And client "A" syncs
    And the harness has recorded the scope state client "A" inspects for "list:b" as "b-before"
    And the proxy will flip one hex digit of "/checksums/list:a/digest" in the next pull response to client "A"

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: rebuilding one scope preserves every other synced scope's materialization

    @negative
    Scenario: the repaired scope is rebuilt alone and the other scope is left exactly as it was
      When client "A" syncs
      Then the sync of client "A" ends with completion "idle"
      And the proxy recorded rebuild requests from client "A" for scope "list:a" only, since the checksum was corrupted
      And the scope state client "A" inspects for "list:b" equals "b-before"
      And querying "SELECT id, title FROM tasks WHERE list_id = 'b' ORDER BY id" on client "A" returns:
        | id  | title |
        | u-1 | uno   |
        | u-2 | dos   |
      And client "A" reports scope "list:a" as not requiring rebuild, with the final rebuild cursor installed

    @negative @cap:crash
    Scenario Outline: in the middle of the rebuild the other scope is still intact
      Given client "A" is armed to crash at "<point>"
      When client "A" syncs
      Then client "A" has crashed
      When the harness restarts client "A"
      Then the scope state client "A" inspects for "list:b" equals "b-before"
      And querying "SELECT id, title FROM tasks WHERE list_id = 'b' ORDER BY id" on client "A" returns:
        | id  | title |
        | u-1 | uno   |
        | u-2 | dos   |
      When client "A" syncs
      Then the sync of client "A" ends with completion "idle"
      And the scope state client "A" inspects for "list:b" equals "b-before"

      Examples:
        | point                          |
        | after_rebuild_attempt_commit   |
        | after_rebuild_page_commit      |
        | before_rebuild_finality_commit |

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: rebuilding a scope never touches local-only data

    @negative
    Scenario: local-only rows survive a rebuild unchanged
      When client "A" syncs
      Then the sync of client "A" ends with completion "idle"
      And querying "SELECT id, body FROM drafts ORDER BY id" on client "A" returns:
        | id  | body          |
        | d-1 | unsent idea   |
        | d-2 | shopping list |

    @negative @cap:crash
    Scenario: local-only rows survive a crash in the middle of a rebuild
      Given client "A" is armed to crash at "after_rebuild_attempt_commit"
      When client "A" syncs
      Then client "A" has crashed
      When the harness restarts client "A"
      Then querying "SELECT id, body FROM drafts ORDER BY id" on client "A" returns:
        | id  | body          |
        | d-1 | unsent idea   |
        | d-2 | shopping list |
