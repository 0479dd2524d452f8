@SYNC-SEED-001 @server @client
Feature: Seeded DB Is Cache Only
  A portable seed lets an app ship with shared reference data already in
  SQLite, so it starts with content instead of a long first rebuild. The seed
  is only a head start. A seeded client signs in and runs the same connect,
  incremental pull, checksum and rebuild protocol as any other client. The
  server decides what the user may see and write. Rows, versions and receipts
  in the file grant nothing. The harness exports a seed, opens a client on it,
  and records every request the client sends through the proxy. It checks the
  ordinary protocol shapes, the server's answers to seed material presented
  where only runtime state is valid, and the server's write decisions on rows
  that came from the seed.

  Background:
    Given a registered table "products" with columns:
      | column      | type   | key | nullable |
      | id          | string | yes | no       |
      | name        | string | no  | no       |
      | price_cents | int    | no  | no       |
    And table "products" places each row in scope "catalog_public"
    And shared scope "catalog_public" is registered as portable
    And a registered table "tasks" with columns:
      | column   | type   | key | nullable |
      | id       | string | yes | no       |
      | owner_id | string | no  | no       |
      | title    | string | no  | no       |
    And table "tasks" places each row in scope "user:{owner_id}"
    And the server holds these "products" rows, created by client "W":
      | id | name   | price_cents | version |
      | p1 | Kettle | 2400        | P1      |
      | p2 | Teapot | 1800        | P2      |
      | p3 | Mug    | 600         | P3      |
    And the operator has exported a portable seed to "seed-1.sqlite" with page limit 2

  Rule: A seeded database enters the normal authenticated connect, delta, checksum and rebuild protocol

    @cap:seed
    Scenario: The first sync of a seeded client is an ordinary authenticated connect that converts the receipt
      Given client "S" of user "alice" is opened on a copy of seed artifact "seed-1.sqlite"
      When client "S" syncs
      Then the first request the proxy recorded from client "S" is "POST /sync/connect" with an "Authorization" header of the form "Bearer <credential>"
      And that connect carries the seed's schema reference, no "client_generation" and a "seed_receipts" member with exactly the key "catalog_public"
      And the connect response lists "catalog_public" in "scopes.add" with a nonempty cursor
      And the connect response lists "user:alice" in "scopes.add" with cursor null
      And the next pull of client "S" presents, for "catalog_public", exactly the cursor the connect returned
      And client "S" rebuilt scope "user:alice" from cursor null
      And client "S" installed for "catalog_public" the checksum of a terminal pull page, equal to the scope digest the harness codec computes over the seeded rows

    @cap:seed
    Scenario: Changes committed after the export arrive by incremental pull, not by re-reading the seed
      Given client "S" of user "alice" is opened on a copy of seed artifact "seed-1.sqlite"
      And client "W" has pushed an update of product "p2" setting "price_cents" to 1900
      When client "S" syncs
      Then the pulls of client "S" delivered for "catalog_public" exactly the upsert of "p2" with "price_cents" 1900
      And the proxy recorded no rebuild request for "catalog_public" from client "S"
      And client "S" has row "p2" of "products" with "price_cents" 1900

    @cap:seed @cap:schema
    Scenario: A receipt the server can no longer honour leads to the ordinary rebuild
      Given client "S" of user "alice" is opened on a copy of seed artifact "seed-1.sqlite"
      And the operator publishes a "class_2" manifest that adds nullable column "colour" of type "string" to table "products"
      When client "S" syncs
      Then the connect response lists "catalog_public" in "scopes.add" with cursor null
      And the response status of that connect is 200
      And the proxy recorded a rebuild of scope "catalog_public" from client "S" starting with "cursor" null
      And client "S" installed for "catalog_public" the checksum of the final rebuild page

  Rule: A seeded database uses no separate authority or sync mode

    @cap:seed
    Scenario: A seeded client speaks only the four sync endpoints
      Given client "S" of user "alice" is opened on a copy of seed artifact "seed-1.sqlite"
      When client "S" syncs
      And client "S" syncs
      Then every request the proxy recorded from client "S" is one of "POST /sync/connect", "POST /sync/push", "POST /sync/pull" and "POST /sync/rebuild"
      And every one of those requests carries an "Authorization" header
      And every one of those requests matches the JSON schema of its endpoint

    @negative @cap:seed
    Scenario: A seeded client without a valid credential gets nothing beyond its file
      Given client "S" of user "alice" is opened on a copy of seed artifact "seed-1.sqlite" with an invalid credential
      When client "S" syncs
      Then the connect of client "S" was answered 401 with error code "auth_required"
      And client "S" reports state "error" with a non-retryable failure of operation "connecting"
      And the proxy recorded no "push", "pull" or "rebuild" request from client "S"
      And client "S" inspection shows no cursor for "catalog_public"

  Rule: Seeded rows, versions and receipts are never treated as authorization

    @negative @cap:seed
    Scenario: A seed receipt presented as a pull cursor is refused
      Given the harness client "H" of user "alice" has connected and rebuilt every assigned scope
      And the harness has read the receipt for "catalog_public" from seed artifact "seed-1.sqlite"
      When the harness client "H" pulls presenting that receipt as the cursor for "catalog_public"
      Then the response status is 400 with error code "invalid_request"
      And the error body has no success members

    @negative @cap:seed @cap:scopes
    Scenario: A seeded scope the server no longer assigns is not served and its unchanged rows are dropped
      Given client "S" of user "alice" is opened on a copy of seed artifact "seed-1.sqlite"
      And the operator unregisters shared scope "catalog_public"
      When client "S" syncs
      Then the connect response does not list "catalog_public" in "scopes.add"
      And no pull of client "S" names scope "catalog_public"
      And client "S" no longer has rows "p1", "p2" and "p3" of "products"
      And client "S" inspection shows no mutation

    @negative @cap:seed @cap:provision
    Scenario: Holding a seeded version does not authorize a write
      Given the write policy of table "products" denies every write by user "alice"
      And client "S" of user "alice" is opened on a copy of seed artifact "seed-1.sqlite"
      When client "S" executes SQL:
        """
        UPDATE products SET price_cents = 1 WHERE id = 'p1';
        """
      And client "S" syncs
      Then the push of client "S" carries an update of "p1" with "base_version" equal to version "P1"
      And the push outcome of that mutation is "rejected_terminal" with code "policy_rejected"
      And the server holds row "p1" of table "products" with "price_cents" 2400 at version "P1"
