@SYNC-SEED-007 @client
Feature: Offline Writes Before First Connect
  An app installed with a verified schema, whether bundled or from a seed, must
  be usable before it has ever reached the server. Writes made then go
  through the same capture and the same durable queue as every later write,
  and they survive restarts and every step of the first connect. A seed also
  gives each row its exact server version as the compare-and-swap base, so an
  offline edit is checked against the version it was made on. The version is
  never invented, and it is never proof that the write is allowed. Until an
  authenticated connect converts the receipts, seeded scopes have no runtime
  cursor. If the first connect drops a seeded scope or finds its receipt
  stale, local edits and the rows they touch stay. A client with no verified
  manifest does not know the synced tables' identities, so it refuses synced
  writes until it has one. The harness blocks the network, writes through
  application SQL, restarts the client, and then follows the first sync on the
  wire and through inspection.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key | nullable |
      | id       | string | yes | no       |
      | owner_id | string | no  | no       |
      | title    | string | no  | no       |
    And table "tasks" places each row in scope "user:{owner_id}"
    And a registered table "products" with columns:
      | column      | type   | key | nullable |
      | id          | string | yes | no       |
      | name        | string | no  | no       |
      | price_cents | int    | no  | no       |
    And table "products" places each row in scope "catalog_public"
    And shared scope "catalog_public" is registered as portable
    And the server holds these "products" rows, created by client "W":
      | id | name   | price_cents | version |
      | p1 | Kettle | 2400        | P1      |
      | p2 | Teapot | 1800        | P2      |
      | p3 | Mug    | 600         | P3      |

  Rule: With a verified bundled or seeded manifest, local writes are accepted before the first connect and kept in the one durable queue

    @cap:crash
    Scenario: Offline writes with a bundled manifest survive a restart and are pushed with their original IDs
      Given client "B" of user "alice" is opened with the current manifest bundled and the network blocked
      When client "B" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t1', 'alice', 'Buy stamps');
        """
      And client "B" executes SQL:
        """
        UPDATE tasks SET title = 'Buy 10 stamps' WHERE id = 't1';
        """
      Then the statements succeeded
      And the proxy recorded no request from client "B"
      And client "B" inspection shows the captured mutations with status "pending" and the bundled manifest as authored schema
      And the harness has recorded the mutation IDs, authored fields and local order client "B" inspects as "offline"
      When the harness kills client "B"
      And the harness restarts client "B" with the network restored
      And client "B" syncs
      Then the first request of client "B" is a connect presenting the bundled manifest reference and no "client_generation"
      And the mutations client "B" pushed are exactly those recorded as "offline", with the same IDs, fields and order after pre-send normalization
      And every pushed mutation has outcome "applied"

    @cap:schema
    Scenario: Offline intent stays in the queue through a schema replace at first connect
      Given client "B" of user "alice" is opened with the current manifest bundled and the network blocked
      And client "B" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t2', 'alice', 'Call bank');
        """
      And the operator publishes a "class_2" manifest that adds nullable column "note" of type "string" to table "tasks"
      When the network of client "B" is restored
      And client "B" syncs
      Then the connect response to client "B" has schema action "replace"
      And client "B" pushed the insert of "t2" with its original "mutation_id" and "authored_schema" equal to the bundled manifest reference
      And the push request "schema" is the new manifest reference
      And the push outcome of that mutation is "applied"

  Rule: A portable-data seed installs each verified row version as the local compare-and-swap base before writes are exposed

    @cap:seed
    Scenario: An offline edit of a seeded row carries the seeded version as its base
      Given the operator has exported a portable seed to "seed-1.sqlite" with page limit 2
      And client "S" of user "alice" is opened on a copy of seed artifact "seed-1.sqlite" with the network blocked
      When client "S" executes SQL:
        """
        UPDATE products SET price_cents = 2300 WHERE id = 'p1';
        """
      Then client "S" inspection shows one pending update of "p1" with base version "P1"
      When the network of client "S" is restored
      And client "S" syncs
      Then the push of client "S" carries the update of "p1" with "base_version" "P1"
      And the push outcome of that mutation is "applied"

    @negative @cap:seed
    Scenario: The seeded version is a base for the server's compare-and-swap, not a licence to overwrite
      Given the operator has exported a portable seed to "seed-1.sqlite" with page limit 2
      And client "W" has pushed an update of product "p1" setting "price_cents" to 2600
      And client "S" of user "alice" is opened on a copy of seed artifact "seed-1.sqlite" with the network blocked
      And client "S" executes SQL:
        """
        UPDATE products SET price_cents = 2300 WHERE id = 'p1';
        """
      When the network of client "S" is restored
      And client "S" syncs
      Then the push of client "S" carries the update of "p1" with "base_version" "P1"
      And the push outcome of that mutation is "conflict" with code "version_conflict"
      And the server holds row "p1" of table "products" with "price_cents" 2600
      And client "S" inspection shows the rejection of that mutation with code "version_conflict"

  Rule: Runtime cursors are withheld until an authenticated connect converts the receipts

    @cap:seed
    Scenario: A seeded client holds receipts and no cursor until its first connect
      Given the operator has exported a portable seed to "seed-1.sqlite" with page limit 2
      When client "S" of user "alice" is opened on a copy of seed artifact "seed-1.sqlite" with the network blocked
      Then client "S" inspection shows a stored receipt and no cursor for "catalog_public"
      When the network of client "S" is restored
      And client "S" syncs
      Then the first pull of client "S" presents for "catalog_public" exactly the cursor its connect returned

  Rule: Unassigned-scope cleanup and stale-receipt rebuild preserve pending authored intent and the local row

    @cap:seed @cap:scopes
    Scenario: A seeded scope dropped at first connect keeps the edited row until its push outcome
      Given the operator has exported a portable seed to "seed-1.sqlite" with page limit 2
      And the operator unregisters shared scope "catalog_public"
      And client "S" of user "alice" is opened on a copy of seed artifact "seed-1.sqlite" with the network blocked
      And client "S" executes SQL:
        """
        UPDATE products SET price_cents = 2300 WHERE id = 'p1';
        """
      And client "S" is paused before sending its first push
      When the network of client "S" is restored
      And client "S" syncs up to that pause
      Then client "S" no longer has rows "p2" and "p3" of "products"
      And client "S" still has row "p1" of "products" with "price_cents" 2300
      And client "S" inspection shows the update of "p1" still unresolved and no other mutation
      When client "S" continues its sync
      Then the update of "p1" reached exactly one push outcome, which client "S" inspects

    @cap:seed @cap:schema
    Scenario: A stale receipt leads to push first, then rebuild, with the edit kept throughout
      Given the operator has exported a portable seed to "seed-1.sqlite" with page limit 2
      And the operator publishes a "class_2" manifest that adds nullable column "colour" of type "string" to table "products"
      And client "S" of user "alice" is opened on a copy of seed artifact "seed-1.sqlite" with the network blocked
      And client "S" executes SQL:
        """
        UPDATE products SET price_cents = 2300 WHERE id = 'p1';
        """
      When the network of client "S" is restored
      And client "S" syncs
      Then the proxy recorded from client "S", in order, a connect, a push holding the update of "p1", then the rebuild of "catalog_public"
      And the connect response lists "catalog_public" in "scopes.add" with cursor null
      And the push outcome of the update of "p1" is "applied"
      And client "S" has row "p1" of "products" with "price_cents" 2300 after the rebuild

  Rule: A client without a verified manifest delays synced-table writes

    Scenario: A fresh client without a manifest refuses synced writes and accepts local-only writes
      Given client "F" of user "alice" is opened without a bundled manifest or seed and with the network blocked
      And client "F" has a local-only table "drafts"
      When client "F" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t3', 'alice', 'Too early');
        """
      Then the statement is refused with a typed error
      And client "F" inspection shows no mutation
      When client "F" executes SQL:
        """
        INSERT INTO drafts (id, body) VALUES ('d1', 'kept locally');
        """
      Then the statement succeeded

    @negative
    Scenario: A bundled manifest whose hash does not match its body is not trusted
      Given client "B" of user "alice" is opened with the current manifest bundled, its "name" of table "tasks" altered but its "schema_hash" kept, and the network blocked
      When client "B" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t4', 'alice', 'Not yet');
        """
      Then the statement is refused with a typed error or the client refused to open with a typed error
      And client "B" inspection shows no mutation

  Rule: Eligible offline intent is never lost and never stored outside the durable queue

    @negative @cap:crash
    Scenario Outline: A crash at "<point>" during the first sync loses no offline write
      Given client "B" of user "alice" is opened with the current manifest bundled and the network blocked
      And client "B" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t5', 'alice', 'Renew passport');
        """
      And the harness has recorded the mutation ID of that insert as "m5"
      And client "B" is armed to crash at "<point>"
      When the network of client "B" is restored
      And client "B" syncs
      And the harness restarts client "B"
      And client "B" syncs
      Then mutation "m5" was applied exactly once on the server
      And no push of client "B" carried the insert of "t5" under another mutation ID

      Examples:
        | point                          |
        | after_push_apply_commit        |
        | after_seal_commit              |
        | before_push_send               |
        | after_push_response_received   |
