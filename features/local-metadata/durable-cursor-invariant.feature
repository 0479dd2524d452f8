@SYNC-LOCAL-003 @client
Feature: Durable Cursor Invariant
  A scope's cursor tells the server what the client already holds. If the
  client stores a new cursor without the rows of that page, those rows are
  never sent again. If it stores the rows without the cursor decision that
  belongs to them, its local state and its digest drift apart. A scope's
  cursor therefore moves only in the same local transaction that validates
  the page and applies its rows, provenance and checksum result. The harness
  delivers pages that touch two scopes, kills the client around the apply
  commit, and checks through inspection that each scope holds either both the
  new rows and the new cursor, or neither. It also feeds pages that fail
  validation and checks that nothing of them is committed.

  Background:
    Given a registered table "notes" with columns:
      | column  | type   | key | nullable |
      | id      | string | yes | no       |
      | team_id | string | no  | no       |
      | body    | string | no  | no       |
    And table "notes" places each row in scope "team:{team_id}"
    And user "alice" is assigned scope "team:t_1"
    And user "alice" is assigned scope "team:t_2"
    And client "A" of user "alice" has connected and rebuilt every assigned scope
    And the harness has recorded the cursors and checksums client "A" inspects as "before"
    And the harness commits on the source database:
      """
      INSERT INTO public.notes (id, team_id, body) VALUES ('n1', 't_1', 'first'), ('n2', 't_2', 'second');
      """
    And capture has materialized every committed source transaction

  Rule: Local cursor advancement commits atomically with successful validation and local apply for that scope

    @cap:crash @cap:scopes @cap:sourceSql
    Scenario Outline: After a kill at "<point>" each scope holds its new rows and new cursor together or neither
      Given client "A" is armed to crash at "<point>"
      When client "A" syncs
      And the harness restarts client "A" with the network blocked
      Then client "A" holds <state>

      Examples:
        | point                          | state                                                                                                                          |
        | after_pull_response_received   | neither "n1" nor "n2", and the cursors and checksums recorded as "before"                                                       |
        | inside_pull_apply              | neither "n1" nor "n2", and the cursors and checksums recorded as "before"                                                       |
        | after_pull_apply_commit        | "n1" with provenance "team:t_1" and "n2" with provenance "team:t_2", and for both scopes the cursors and checksums of that page |

    @cap:crash @cap:scopes @cap:sourceSql
    Scenario: A page lost to a kill before its commit is fetched again and applied once
      Given client "A" is armed to crash at "inside_pull_apply"
      When client "A" syncs
      And the harness restarts client "A"
      And client "A" syncs
      Then the first pull of client "A" after the restart presents the cursors recorded as "before"
      And client "A" holds "n1" and "n2" exactly once each
      And client "A" inspection shows no mutation

  Rule: A crash state never holds the new cursor without all its data, or the data without its paired cursor decision

    @negative @cap:scopes @cap:sourceSql
    Scenario: A page with one bad row checksum commits nothing for any scope
      Given the proxy alters one character of the "row_checksum" digest of the change for "n2" in the next pull response to client "A"
      When client "A" syncs
      Then client "A" reports state "error" with a non-retryable failure of operation "pulling"
      And client "A" holds neither "n1" nor "n2"
      And client "A" inspection shows the cursors and checksums recorded as "before"

    @negative @cap:scopes @cap:sourceSql
    Scenario: A terminal checksum mismatch in one scope withholds only that scope's cursor
      Given the proxy alters one character of the "checksums.team:t_2" digest in the next terminal pull response to client "A"
      And the proxy blocks rebuild requests from client "A"
      When client "A" syncs
      Then client "A" inspection shows for "team:t_1" the cursor and checksum that page issued, with "n1" present
      And client "A" inspection shows for "team:t_2" no cursor installed from that page and the scope marked for rebuild
      And client "A" inspection shows for "team:t_2" no checksum taken from that page

    @negative @cap:crash @cap:scopes @cap:sourceSql
    Scenario: A cursor is never advanced for a response that was received but not applied
      Given client "A" is armed to crash at "after_pull_response_received"
      When client "A" syncs
      And the harness restarts client "A" with the network blocked
      Then client "A" inspection shows the cursors recorded as "before" for "team:t_1" and "team:t_2"
      And client "A" holds neither "n1" nor "n2"
