@SYNC-LOCAL-006 @client
Feature: Scope Cleanup Preserves Pending Intent
  Several paths delete local data: losing a scope assignment, cleaning up a
  seed at first connect, resetting a scope when a rebuild starts, and pruning
  when a rebuild finishes. All of them may remove only server provenance,
  continuation state and cached rows that no scope justifies. A row that
  pending or inspectably blocked local intent refers to must keep its
  application-visible state until that intent has its push outcome or the
  application resolves it. None of these paths may create a mutation. Losing
  access or rebuilding is no reason to throw away what the user did. The
  harness leaves local edits unsent, changes assignment or forces a rebuild on
  the server, and checks the local rows, the queue and the proxy log at each
  step. A client pushes before it pulls or rebuilds, so an edit is still
  unsent at cleanup time only when the cleanup comes first (the loss is learnt
  at the connect of a restarted client, or a seed is cleaned up at first
  connect) or when the edit cannot be sent (a rejection kept for the
  application to resolve).

  Background:
    Given a registered table "notes" with columns:
      | column  | type   | key | nullable |
      | id      | string | yes | no       |
      | team_id | string | no  | no       |
      | body    | string | no  | no       |
    And table "notes" places each row in scope "team:{team_id}"
    And user "alice" is assigned scope "team:t_1"
    And the server holds these "notes" rows, created by client "W":
      | id | team_id | body     | version |
      | n1 | t_1     | agenda   | N1      |
      | n2 | t_1     | minutes  | N2      |
      | n3 | t_1     | actions  | N3      |
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  Rule: Cleanup deletes only server provenance, continuation state and unprotected zero-provenance rows

    @cap:scopes
    Scenario: Losing an assignment removes unprotected rows and keeps the row with a pending edit
      Given the proxy blocks push requests from client "A"
      And client "A" executes SQL:
        """
        UPDATE notes SET body = 'agenda v2' WHERE id = 'n1';
        """
      And the operator revokes scope "team:t_1" from user "alice"
      And client "A" has been restarted on the same database, so that its next sync connects first
      When client "A" syncs
      Then client "A" no longer has rows "n2" and "n3" of "notes"
      And client "A" has row "n1" of "notes" with "body" "agenda v2"
      And client "A" provenance holds nothing for scope "team:t_1"
      And client "A" inspection shows no cursor, checksum or rebuild attempt for "team:t_1"
      And client "A" inspection shows the update of "n1" still unsent and no other mutation

  Rule: Rows addressed by pending or blocked intent keep their local state on every cleanup path until push-first reconciliation or application policy resolves the intent

    @cap:scopes
    Scenario: After the assignment loss the pending edit is resolved by its push outcome
      Given client "A" executes SQL:
        """
        UPDATE notes SET body = 'agenda v2' WHERE id = 'n1';
        """
      And the operator revokes scope "team:t_1" from user "alice"
      When client "A" syncs
      Then the proxy recorded from client "A" a push carrying the update of "n1"
      And the update of "n1" reached exactly one push outcome, which client "A" inspects
      And client "A" applied that outcome to row "n1" as the push reconciliation rules say

    @cap:scopes @cap:provision @cap:sourceSql
    Scenario: A rebuild reset and final pruning keep the row whose rejected edit awaits the application
      Given the server write policy rejects every update of "notes" by user "alice"
      And client "A" executes SQL:
        """
        UPDATE notes SET body = 'agenda v2' WHERE id = 'n1';
        """
      And client "A" has synced
      And client "A" inspection shows a rejection of that mutation with status "rejected_terminal" and code "policy_rejected"
      And the server moves row "n1" to team "t_2" and a new membership generation is minted for scope "team:t_1"
      When client "A" syncs
      Then client "A" rebuilt scope "team:t_1"
      And client "A" has row "n1" of "notes" with "body" "agenda v2"
      And client "A" provenance for row "n1" of "notes" does not contain "team:t_1"
      And client "A" inspection still shows that rejection with code "policy_rejected" and the unchanged mutation

    @cap:scopes @cap:crash
    Scenario: A crash inside scope cleanup keeps the protected row and the queue
      Given the proxy blocks push requests from client "A"
      And client "A" executes SQL:
        """
        UPDATE notes SET body = 'agenda v2' WHERE id = 'n1';
        """
      And the operator revokes scope "team:t_1" from user "alice"
      And client "A" has been restarted on the same database, so that its next sync connects first
      And client "A" is armed to crash at "inside_scope_cleanup"
      When client "A" syncs
      And the harness restarts client "A" with the network blocked
      Then client "A" has row "n1" of "notes" with "body" "agenda v2"
      And client "A" inspection shows the update of "n1" still unsent and no other mutation

    @cap:seed @cap:scopes
    Scenario: Seed cleanup at first connect keeps an offline insert and an offline edit
      Given a registered table "products" with columns:
        | column | type   | key | nullable |
        | id     | string | yes | no       |
        | name   | string | no  | no       |
      And table "products" places each row in scope "catalog_public"
      And shared scope "catalog_public" is registered as portable
      And the server holds these "products" rows, created by client "W":
        | id | name   | version |
        | p1 | Kettle | P1      |
        | p2 | Teapot | P2      |
      And the operator has exported a portable seed to "seed-1.sqlite" with page limit 2
      And the operator unregisters shared scope "catalog_public"
      And client "S" of user "alice" is opened on a copy of seed artifact "seed-1.sqlite" with the network blocked
      And client "S" executes SQL:
        """
        UPDATE products SET name = 'Steel kettle' WHERE id = 'p1';
        INSERT INTO products (id, name) VALUES ('p9', 'Whisk');
        """
      When the network of client "S" is restored
      And client "S" syncs with push requests blocked
      Then client "S" no longer has row "p2" of "products"
      And client "S" has row "p1" of "products" with "name" "Steel kettle" and row "p9" with "name" "Whisk"
      And client "S" inspection shows the update of "p1" and the insert of "p9" still unsent

  Rule: Cleanup never becomes a mutation, and lost assignment or rebuild never authorizes discarding intent

    @negative @cap:scopes
    Scenario: Assignment removal creates no mutation and discards no intent
      Given the proxy blocks push requests from client "A"
      And client "A" executes SQL:
        """
        UPDATE notes SET body = 'agenda v2' WHERE id = 'n1';
        """
      And the harness has recorded the mutations client "A" inspects as "before"
      And the operator revokes scope "team:t_1" from user "alice"
      And client "A" has been restarted on the same database, so that its next sync connects first
      When client "A" syncs
      Then client "A" inspection shows exactly the mutations recorded as "before", unsent
      And the proxy recorded no push from client "A" that carries a "delete" of "n1", "n2" or "n3"

    @negative @cap:scopes @cap:provision
    Scenario: A forced rebuild creates no mutation and discards no intent
      Given the server write policy rejects every update of "notes" by user "alice"
      And client "A" executes SQL:
        """
        UPDATE notes SET body = 'agenda v2' WHERE id = 'n1';
        """
      And client "A" has synced
      And the harness has recorded the mutations client "A" inspects as "before"
      When the operator changes the membership rule of "notes" so that it mints a new membership generation for scope "team:t_1"
      And client "A" syncs
      Then client "A" rebuilt scope "team:t_1"
      And client "A" inspection shows exactly the mutations recorded as "before", unchanged
      And the proxy recorded no push from client "A" after the rejection
      And client "A" has row "n1" of "notes" with "body" "agenda v2"

    @negative @cap:scopes @cap:provision
    Scenario: A rejected edit without a server row keeps the local row after the assignment is lost
      Given the server write policy rejects every update of "notes" by user "alice"
      And client "A" executes SQL:
        """
        UPDATE notes SET body = 'agenda v2' WHERE id = 'n1';
        """
      And client "A" has synced
      And client "A" inspection shows a rejection of that mutation with status "rejected_terminal" and code "policy_rejected"
      When the operator revokes scope "team:t_1" from user "alice"
      And client "A" syncs
      Then client "A" has row "n1" of "notes" with "body" "agenda v2"
      And client "A" inspection still shows that rejection with code "policy_rejected" and the unchanged mutation
      And client "A" no longer has rows "n2" and "n3" of "notes"
