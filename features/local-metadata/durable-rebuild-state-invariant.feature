@SYNC-LOCAL-002 @client
Feature: Durable Rebuild State Invariant
  A rebuild replaces a scope's local state page by page, and only the last
  step, checked against the server's scope digest, may declare it complete.
  The client keeps the attempt (rebuild ID, page limit, continuation token),
  each applied page, the rows' provenance and the pending final result on
  disk. A crash then resumes the same attempt without applying a page twice.
  The final cursor and checksum are installed only after verification
  succeeds. A client that restarts from half a rebuild and reports the scope
  as healthy would silently keep wrong data. The harness serves a rebuild of
  several pages, kills the client between its commits, and checks on the wire
  that the restarted client continues the same attempt. Through inspection it
  checks that no final state appears before the digest is verified.

  Background:
    Given a registered table "notes" with columns:
      | column  | type   | key | nullable |
      | id      | string | yes | no       |
      | team_id | string | no  | no       |
      | body    | string | no  | no       |
    And table "notes" places each row in scope "team:{team_id}"
    And user "alice" is assigned scope "team:t_1"
    And the harness commits on the source database:
      """
      INSERT INTO public.notes (id, team_id, body) VALUES
        ('n1', 't_1', 'one'), ('n2', 't_1', 'two'), ('n3', 't_1', 'three'),
        ('n4', 't_1', 'four'), ('n5', 't_1', 'five');
      """
    And capture has materialized every committed source transaction
    And client "A" of user "alice" is opened with rebuild limit 2

  Rule: Rebuild session, page-apply, provenance and verification state survive process death

    @cap:crash @cap:scopes @cap:sourceSql
    Scenario: After a kill following page 1, the same attempt continues with page 2
      Given client "A" is armed to crash at "after_rebuild_page_commit" for scope "team:t_1"
      When client "A" syncs
      And the harness restarts client "A"
      And client "A" syncs
      Then the rebuild requests of client "A" for "team:t_1" all carry the same "rebuild_id" and "limit" 2
      And the first rebuild request after the restart presents the "cursor" page 1 returned
      And client "A" applied each of "n1" to "n5" once, with provenance "team:t_1"
      And client "A" inspection shows for "team:t_1" the "final_scope_cursor" and the checksum of the final page

    @cap:crash @cap:scopes @cap:sourceSql
    Scenario: A kill before the first page response keeps the attempt and its null first request
      Given client "A" is armed to crash at "after_rebuild_attempt_commit" for scope "team:t_1"
      When client "A" syncs
      And the harness restarts client "A"
      Then client "A" inspection shows one rebuild attempt for "team:t_1" with no page applied and no continuation
      When client "A" syncs
      Then the first rebuild request after the restart carries the "rebuild_id" recorded in that attempt, "limit" 2 and "cursor" null

    @cap:crash @cap:scopes @cap:sourceSql
    Scenario: A kill between the final page and finality completes finality from the stored page
      Given client "A" is armed to crash at "before_rebuild_finality_commit" for scope "team:t_1"
      When client "A" syncs
      And the harness restarts client "A"
      And client "A" syncs
      Then the proxy recorded no rebuild request for "team:t_1" from client "A" after the restart
      And client "A" inspection shows for "team:t_1" the "final_scope_cursor" and the checksum of the final page recorded before the kill
      And the next pull of client "A" presents that "final_scope_cursor" for "team:t_1"

  Rule: A restart never installs a final cursor or checksum from an unverifiable partial state

    @negative @cap:crash @cap:scopes @cap:sourceSql
    Scenario Outline: Inspection right after a kill at "<point>" shows no final state for the scope
      Given client "A" is armed to crash at "<point>" for scope "team:t_1"
      When client "A" syncs
      And the harness restarts client "A" with the network blocked
      Then client "A" inspection shows for "team:t_1" no cursor, no checksum and the scope still marked for rebuild

      Examples:
        | point                          |
        | after_rebuild_attempt_commit   |
        | after_rebuild_page_commit      |

    @negative @cap:crash @cap:scopes @cap:sourceSql
    Scenario: A final page whose digest does not verify is never installed, before or after a restart
      Given the proxy will flip one hex digit of "/checksum/digest" in the next final rebuild response for scope "team:t_1" to client "A"
      And client "A" is armed to crash at "before_rebuild_finality_commit" for scope "team:t_1"
      When client "A" syncs
      And the harness restarts client "A" with the network blocked
      Then client "A" inspection shows for "team:t_1" no cursor, no checksum and the scope still marked for rebuild
      When the network of client "A" is restored
      And client "A" syncs
      Then client "A" started a new rebuild attempt for "team:t_1" with a new "rebuild_id" and "cursor" null
      And client "A" inspection shows for "team:t_1" the cursor and checksum of that new attempt's final page

    @negative @cap:crash @cap:scopes @cap:sourceSql
    Scenario: A truncated page is not applied, and a restart does not treat it as applied
      Given the proxy truncates the response to the second rebuild page for "team:t_1" of client "A"
      When client "A" syncs
      And the harness kills client "A"
      And the harness restarts client "A" with the network blocked
      Then client "A" inspection shows for "team:t_1" no cursor and no checksum
      And client "A" holds exactly the rows of page 1 with provenance "team:t_1"
