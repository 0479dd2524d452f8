@SYNC-MUT-006 @client
Feature: No Silent Server Apply Echo Loop
  When the client writes server state into its local tables (rows from a pull
  page, a rebuild page, a portable seed or a push response), its change
  capture must stay switched off for that write. Otherwise applying a server
  row would enqueue a local mutation, the next sync would push it back, and
  the two sides would echo each other's writes forever, each time with new
  versions. The harness makes the client apply each kind of server state and
  checks that no mutation record appears and that further syncs send no push
  request.

  Background:
    Given a registered table "notes" with columns:
      | column     | type          | key | writable | lifecycle  |
      | id         | string        | yes | no       |            |
      | owner_id   | string        | no  | yes      |            |
      | body       | string        | no  | yes      |            |
      | price      | decimal(10,2) | no  | yes      |            |
      | updated_at | datetime      | no  | no       | updated_at |
      | deleted_at | datetime      | no  | no       | deleted_at |
    And table "notes" places each row in scope "user:{owner_id}"
    And client "W" of user "alice" has connected
    And the server holds these "notes" rows, created by client "W":
      | id  | owner_id | body  | version |
      | n-1 | alice    | milk  | V1      |
      | n-2 | alice    | bread | V2      |
    And capture has materialized every committed source transaction

  Rule: applying pull, rebuild, seed or push-response state suppresses local change capture for that apply

    @cap:provision
    Scenario: applying a rebuild creates no mutation
      When client "A" of user "alice" has connected and rebuilt every assigned scope
      Then client "A" query "SELECT id FROM notes ORDER BY id" returns:
        | id  |
        | n-1 |
        | n-2 |
      And client "A" shows no mutation record

    @cap:provision
    Scenario Outline: applying a pulled <change> creates no mutation
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      When <server write>
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes:
        | scope      | table | op     | pk   |
        | user:alice | notes | <op>   | <pk> |
      And client "A" shows no mutation record

      Examples:
        | change    | server write                                                    | op     | pk  |
        | insert    | client "W" inserts row "n-3" of table "notes" with body "figs"                   | upsert | n-3 |
        | update    | client "W" updates row "n-1" of table "notes" from "V1" setting body "rye"       | upsert | n-1 |
        | tombstone | client "W" deletes row "n-2" of table "notes" from "V2"                          | delete | n-2 |

    @cap:provision
    Scenario: applying a push response whose server_row differs from the authored values creates no mutation
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      When client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'"
      And client "A" syncs
      Then client "A" query "SELECT updated_at FROM notes WHERE id = 'n-1'" returns the updated_at of the accepted outcome's server_row
      And client "A" shows exactly one mutation record, the update of row "n-1", with status "accepted"

    @cap:provision
    Scenario: applying a conflict outcome's server row creates no mutation
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And client "W" updates row "n-1" of table "notes" from "V1" setting body "rye"
      When client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'"
      And client "A" syncs
      Then client "A" query "SELECT body FROM notes WHERE id = 'n-1'" returns:
        | body |
        | rye  |
      And client "A" shows exactly one mutation record, the update of row "n-1", with status "server_rejected"

    @cap:provision @cap:scopes @cap:seed
    Scenario: installing a verified portable seed creates no mutation
      Given table "notes" now also places rows whose owner_id is "alice" in scope "notes:alice"
      And shared scope "notes:alice" is registered as portable
      And capture has materialized every committed source transaction
      And the operator has exported a portable seed to "notes.sqlite" with page limit 100
      When client "A" of user "alice" is opened on a copy of seed artifact "notes.sqlite"
      Then client "A" query "SELECT id FROM notes ORDER BY id" returns:
        | id  |
        | n-1 |
        | n-2 |
      And client "A" shows no mutation record
      When client "A" syncs
      Then the proxy recorded no push from client "A"

  Rule: no client mutation is ever caused solely by applying authoritative state

    @negative @cap:provision
    Scenario: idle syncs after applying server state send no push and move no version
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And client "W" updates row "n-1" of table "notes" from "V1" setting body "rye"
      And capture has materialized every committed source transaction
      And client "A" syncs
      When client "A" syncs
      And client "A" syncs
      Then the proxy recorded no push from client "A"
      And the server holds row "n-1" of table "notes" with body "rye" at the version of client "W"'s update

    @negative @cap:provision
    Scenario: the pull echo of an accepted push adds no mutation
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'"
      And client "A" syncs
      When capture has materialized every committed source transaction
      And client "A" syncs
      And client "A" syncs
      Then the proxy recorded exactly one push from client "A"
      And client "A" shows exactly one mutation record, the update of row "n-1", with status "accepted"
