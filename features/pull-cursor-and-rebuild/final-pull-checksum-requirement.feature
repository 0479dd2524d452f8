@SYNC-PULL-017 @server @client
Feature: Final Pull Checksum Requirement
  Incremental pull only ever sends differences, so the terminal page of a
  drain is where client and server compare whole scopes. The server must put
  an authoritative scope digest for each active scope on every terminal page
  ("has_more": false), even when the page carries no change. The client must
  then recompute each applicable scope digest from what it now holds and only
  for scopes that match install the page's cursor and the digest as verified;
  a scope that does not match keeps its previous progress and is marked for
  rebuild, while the other scopes go ahead. A client that installs terminal
  progress without looking at the digest cannot notice a lost or altered
  change.

  On the server side the harness drains pulls and recomputes every terminal
  digest from the rows it received. On the client side the proxy removes a
  change or damages a digest on the terminal page, and the harness checks the
  client's cursors, checksums, rebuild flags and requests.

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
      INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-1', 'a', NULL, 'one'), ('t-2', 'a', NULL, 'two'), ('u-1', 'b', NULL, 'uno');
      """

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: every terminal pull page carries authoritative scope checksums

    Scenario Outline: the terminal page of a drain has a correct digest for every active scope
      Given the harness client "H" of user "alice" has completed a sync
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title)
        SELECT 'n-' || g, CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END, NULL, 'new ' || g FROM generate_series(1, <new_rows>) AS g;
        """
      When the harness client "H" pulls with limit <limit> until "has_more" is false
      Then the last response of the drain has member "/checksums" with exactly the keys "list:a" and "list:b"
      And each value of "/checksums" in the last response equals the scope digest the harness computes from the rows "H" now holds for that scope
      And each value of "/checksums" in the last response has exactly the members "algorithm" "sha256", "version" 1, "encoding" "hex" and a 64-character lowercase hex "digest"

      Examples:
        | new_rows | limit | situation                            |
        | 0        | 10    | an empty page with no change         |
        | 4        | 10    | one page with changes in both scopes |
        | 4        | 1     | the last page of a five-page drain   |

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: a client verifies each applicable scope before installing terminal progress or treating it as healthy

    Scenario: a matching digest is installed with the terminal cursor
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And the harness has committed and capture has materialized:
        """
        UPDATE public.tasks SET title = 'two v2' WHERE id = 't-2';
        """
      When client "A" syncs
      Then the sync of client "A" ends with completion "idle"
      And for every scope, the cursor client "A" inspects equals the last cursor the server issued to it for that scope
      And for scopes "list:a" and "list:b", the checksum client "A" inspects equals the value of that scope in "/checksums" of the last pull response

    @negative
    Scenario: a change lost in transit is caught by the digest and repaired by a rebuild
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And the harness has recorded the cursors client "A" inspects as "old"
      And the harness has committed and capture has materialized:
        """
        UPDATE public.tasks SET title = 'two v2' WHERE id = 't-2';
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('u-2', 'b', NULL, 'dos');
        """
      And the proxy will remove the change for row "t-2" of scope "list:a" from the next pull response to client "A"
      When client "A" syncs
      Then no later pull request of client "A" presented the cursor issued for "list:a" in that pull response
      And the next pull request of client "A" presented for "list:b" the cursor issued for "list:b" in that pull response
      And the proxy recorded a rebuild of scope "list:a" from client "A" starting with "cursor" null
      And the proxy recorded no rebuild request from client "A" for scope "list:b"
      And querying "SELECT id, title FROM tasks ORDER BY id" on client "A" returns:
        | id  | title  |
        | t-1 | one    |
        | t-2 | two v2 |
        | u-1 | uno    |
        | u-2 | dos    |

    @negative
    Scenario: a damaged digest for one scope withholds that scope's progress only
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And client "A" syncs
      And the harness has recorded the cursors client "A" inspects as "old"
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-3', 'a', NULL, 'three'), ('u-2', 'b', NULL, 'dos');
        """
      And the proxy will flip one hex digit of "/checksums/list:a/digest" in the next pull response to client "A"
      And the proxy will hold the next rebuild request from client "A"
      When client "A" starts syncing
      And the proxy has received a rebuild request for scope "list:a" from client "A"
      Then the cursor client "A" inspects for scope "list:a" is the "old" one or none, never the one issued for it in that pull response
      And client "A" reports scope "list:a" as requiring rebuild
      And the cursor client "A" inspects for scope "list:b" equals the cursor issued for "list:b" in that pull response
      And the checksum client "A" inspects for scope "list:b" equals the value of "list:b" in "/checksums" of that pull response
      When the proxy releases the held request
      And the sync of client "A" finishes
      Then the proxy recorded a rebuild of scope "list:a" from client "A" starting with "cursor" null
      And the proxy recorded no rebuild request from client "A" for scope "list:b"
      And the sync of client "A" ends with completion "idle"
