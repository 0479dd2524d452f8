@SYNC-PULL-020 @client
Feature: Rebuild Does Not Erase Valid Overlapping Data
  One local row can be justified by several scopes at once, for example a
  task that is both on a personal list and on a shared one. The client keeps
  a provenance edge per scope, and a rebuild of one scope only resets and
  re-establishes that scope's edges. While any other valid scope still has an
  edge to the row, the row stays, whether the rebuild is just starting,
  crashed half-way, or finished with a snapshot that no longer contains the
  row. A client that deletes rows by "this scope no longer lists it" without
  looking at the other edges makes shared data vanish from the screen until
  some later sync happens to bring it back.

  The harness places rows in two scopes, forces one scope to rebuild (by
  damaging its terminal digest or by hiding a membership change in flight),
  and checks rows and provenance during and after the rebuild. A row that only
  the rebuilt scope justified is the control: it must go.

  Background:
    Given a registered table "tasks" with columns:
      | column    | type   | nullable | key |
      | id        | string | false    | yes |
      | list_id   | string | false    | no  |
      | also_list | string | true     | no  |
      | title     | string | false    | no  |
    And table "tasks" places each row in scope "list:{list_id}"
    And table "tasks" also places each row in scope "list:{also_list}" when "also_list" is not null
    And the default scope of user "alice" is revoked
    And user "alice" is assigned scope "list:a"
    And user "alice" is assigned scope "list:b"
    And the harness has committed and capture has materialized:
      """
      INSERT INTO public.tasks (id, list_id, also_list, title) VALUES ('t-7', 'a', 'b', 'shared'), ('t-8', 'a', NULL, 'only in a'), ('t-1', 'a', NULL, 'one');
      """
    And client "A" of user "alice" is opened with rebuild limit 1
    And client "A" has connected and rebuilt every assigned scope
    And client "A" syncs

  @cap:provision @cap:scopes @cap:sourceSql @cap:capture
  Rule: a row is not removed by a rebuild while another valid scope still justifies it

    @negative
    Scenario: a row that left the rebuilt scope but is still in another scope stays
      Given the harness has committed and capture has materialized:
        """
        UPDATE public.tasks SET list_id = 'c', title = 'shared moved' WHERE id = 't-7';
        UPDATE public.tasks SET list_id = 'c' WHERE id = 't-8';
        """
      And the proxy will remove every change of scope "list:a" from the next pull response to client "A"
      When client "A" syncs
      Then the sync of client "A" ends with completion "idle"
      And the proxy recorded a rebuild of scope "list:a" from client "A" starting with "cursor" null
      And querying "SELECT id, title FROM tasks ORDER BY id" on client "A" returns:
        | id  | title        |
        | t-1 | one          |
        | t-7 | shared moved |
      And client "A" inspection shows exactly these provenance edges:
        | scope  | table | pk  |
        | list:a | tasks | t-1 |
        | list:b | tasks | t-7 |
      And client "A" inspection shows no mutation record

    @negative
    Scenario: a row still in both scopes keeps both edges after the rebuild of one of them
      Given the proxy will flip one hex digit of "/checksums/list:a/digest" in the next pull response to client "A"
      When client "A" syncs
      Then the proxy recorded a rebuild of scope "list:a" from client "A" starting with "cursor" null
      And client "A" inspection shows exactly these provenance edges:
        | scope  | table | pk  |
        | list:a | tasks | t-1 |
        | list:a | tasks | t-7 |
        | list:a | tasks | t-8 |
        | list:b | tasks | t-7 |
      And querying "SELECT id, title FROM tasks WHERE id = 't-7'" on client "A" returns:
        | id  | title  |
        | t-7 | shared |

    @negative @cap:crash
    Scenario Outline: in the middle of the rebuild the shared row is still visible and still justified by the other scope
      Given the proxy will flip one hex digit of "/checksums/list:a/digest" in the next pull response to client "A"
      And client "A" is armed to crash at "<point>" for scope "list:a"
      When client "A" syncs
      Then client "A" has crashed
      When the harness restarts client "A"
      Then querying "SELECT id, title FROM tasks WHERE id = 't-7'" on client "A" returns:
        | id  | title  |
        | t-7 | shared |
      And client "A" inspection shows a provenance edge from scope "list:b" to row "t-7" of table "tasks"

      Examples:
        | point                          |
        | after_rebuild_attempt_commit   |
        | after_rebuild_page_commit      |
        | before_rebuild_finality_commit |
