@SYNC-MUT-008 @server @client
Feature: No Synthetic Cleanup Tombstones
  When a scope leaves a client's assignment, or a rebuild finds that a local
  row is no longer justified by the scope, the client removes its stale
  provenance and the rows nothing justifies any more. That is local cleanup,
  not a deletion: the client must not enqueue a delete mutation for it, and
  the server must not invent a tombstone to make it happen. A delete reaches
  the server only when the user deleted something, and a tombstone reaches
  the client only when the server really has one. The harness revokes scopes
  and moves rows between scopes, then inspects the pull and rebuild responses
  on the wire and the client's provenance, rows and mutation queue.

  Background:
    Given a registered table "cards" with columns:
      | column     | type     | key | writable | lifecycle  |
      | id         | string   | yes | no       |            |
      | team       | string   | no  | yes      |            |
      | title      | string   | no  | yes      |            |
      | deleted_at | datetime | no  | no       | deleted_at |
    And table "cards" places each row in scope "team:{team}"
    And user "alice" is assigned scope "team:red"
    And user "alice" is assigned scope "team:blue"
    And client "W" of user "alice" has connected
    And the server holds these "cards" rows, created by client "W":
      | id  | team | title  | version |
      | c-1 | red  | plan   | C1      |
      | c-2 | red  | budget | C2      |
      | c-3 | blue | hiring | C3      |
    And capture has materialized every committed source transaction

  Rule: scope removal and rebuild pruning remove stale local provenance and unjustified rows

    @client @cap:provision @cap:scopes
    Scenario: revoking a scope removes the rows only that scope justified
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      When the operator revokes scope "team:red" from user "alice"
      And client "A" syncs
      Then client "A" query "SELECT id FROM cards ORDER BY id" returns:
        | id  |
        | c-3 |
      And client "A" has no provenance for scope "team:red"
      And client "A" has provenance "team:blue" for row "c-3" of table "cards"

    @client @cap:provision @cap:sourceSql
    Scenario: a rebuild prunes a row that left the scope while the client was away
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And the operator changes the membership rule of table "cards" so that row "c-2" belongs to no scope, which makes scope "team:red" require a rebuild
      And capture has materialized every committed source transaction
      When client "A" syncs
      Then client "A" query "SELECT id FROM cards ORDER BY id" returns:
        | id  |
        | c-1 |
        | c-3 |
      And client "A" has no provenance for row "c-2" of table "cards"

  Rule: cleanup never enqueues a delete unless the server supplied an authoritative tombstone

    @client @negative @cap:provision @cap:scopes
    Scenario: scope removal and rebuild pruning leave the queue empty and send no push
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      When the operator revokes scope "team:red" from user "alice"
      And client "A" syncs
      And client "A" syncs
      Then client "A" shows no mutation record
      And the proxy recorded no push from client "A"
      And the server holds row "c-1" of table "cards" with title "plan" at version "C1"

    @client @cap:provision
    Scenario: an authoritative tombstone is applied as a deletion, still without a mutation
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And client "W" deletes row "c-1" of table "cards" from "C1"
      And capture has materialized every committed source transaction
      When client "A" syncs
      Then the pull response delivered to client "A" holds a "delete" of row "c-1" in scope "team:red" carrying the tombstone row and its row_checksum
      And client "A" query "SELECT id FROM cards WHERE id = 'c-1' AND deleted_at IS NULL" returns:
        | id |
      And client "A" shows no mutation record

  Rule: the server never invents a tombstone for a scope removal or a row that left a scope

    @server @negative @cap:provision @cap:scopes
    Scenario: a pull after revocation lists the scope as removed and carries no change for it
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      When the operator revokes scope "team:red" from user "alice"
      And client "A" pulls
      Then the pull response has scope_updates.remove ["team:red"]
      And the pull response lists no change in scope "team:red"
      And the pull response has no scope_cursors entry and no checksums entry for "team:red"

    @server @negative @cap:provision @cap:sourceSql
    Scenario: a row that moves to another scope leaves its old scope as a rowless delete
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      When the harness commits on the source database:
        """
        UPDATE public.cards SET team = 'blue' WHERE id = 'c-2';
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes:
        | scope     | table | op     | pk  |
        | team:red  | cards | delete | c-2 |
        | team:blue | cards | upsert | c-2 |
      And the "delete" of row "c-2" in scope "team:red" carries no row and no row_checksum
      And client "A" query "SELECT team FROM cards WHERE id = 'c-2'" returns:
        | team |
        | blue |
      And client "A" shows no mutation record
