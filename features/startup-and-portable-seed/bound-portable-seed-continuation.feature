@SYNC-SEED-005 @server
Feature: Bound Portable Seed Continuation
  The export pages through a snapshot with page tokens, and it hands clients
  continuation receipts. Each is only safe in the one context it was issued
  for. A page token is bound by MAC to its export, transaction, scope,
  generations, snapshot boundary, next row ordinal and page limit; presenting
  it anywhere else must fail. A receipt binds no user or client. It becomes a
  usable cursor only when an authenticated connect has checked the current
  assignment and state, and the cursor it yields belongs to that user and
  client alone. The harness alters tokens one binding at a time, moves them
  between scopes, transactions and connections, and presents receipts where
  only client-bound cursors are valid.

  Background:
    Given a registered table "products" with columns:
      | column | type   | key | nullable |
      | id     | string | yes | no       |
      | name   | string | no  | no       |
    And table "products" places each row in scope "catalog_public"
    And a registered table "manuals" with columns:
      | column | type   | key | nullable |
      | id     | string | yes | no       |
      | title  | string | no  | no       |
    And table "manuals" places each row in scope "manuals_public"
    And shared scope "catalog_public" is registered as portable
    And shared scope "manuals_public" is registered as portable
    And the harness commits on the source database:
      """
      INSERT INTO public.products (id, name) VALUES ('p1', 'Kettle'), ('p2', 'Teapot'), ('p3', 'Mug'), ('p4', 'Tray'), ('p5', 'Spoon');
      INSERT INTO public.manuals (id, title) VALUES ('m1', 'Kettle guide'), ('m2', 'Teapot guide'), ('m3', 'Mug guide');
      """
    And capture has materialized every committed source transaction

  Rule: Seed page tokens authenticate every export, transaction, scope, generation, boundary, ordinal and limit binding

    @cap:seed @cap:sourceSql
    Scenario: Tokens page through the snapshot in contiguous ordinals and a repeated token repeats its page
      Given seed connection "S1" runs "BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE"
      And seed connection "S1" has called the portable seed manifest function with page limit 2 and kept the page token of "catalog_public" as "tok0"
      When seed connection "S1" pages through "catalog_public" from "tok0" at ordinals 0, 2 and 4
      Then the pages hold 2, 2 and 1 records in strictly increasing row identity order
      And the last page has "has_more" false and "page_token" null
      And the 5 records equal the manifest "cardinality" of "catalog_public"
      And calling the seed scope function again with the token of ordinal 2 returns a byte-identical page

    @negative @cap:seed @cap:sourceSql
    Scenario Outline: A page token altered in <binding> is refused
      Given seed connection "S1" runs "BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE"
      And seed connection "S1" has called the portable seed manifest function with page limit 2 and kept the page token of "catalog_public" as "tok0"
      And seed connection "S1" has called the seed scope function with "tok0" for "catalog_public" at ordinal 0 and kept the next token as "tok2"
      When seed connection "S1" calls the seed scope function with <token> for <scope> at ordinal <ordinal> with limit <limit>
      Then the page call fails with error code "invalid_request" or an SQL error
      And the page call returned no records

      Examples:
        | binding                              | token                                                            | scope            | ordinal | limit |
        | its MAC                              | "tok2" with one bit of its MAC flipped                           | "catalog_public"  | 2       | 2     |
        | its payload ordinal                  | "tok2" with "next_row_ordinal" changed to "4" and the MAC kept   | "catalog_public"  | 4       | 2     |
        | its payload page limit               | "tok2" with "page_limit" changed to "3" and the MAC kept         | "catalog_public"  | 2       | 3     |
        | its payload export ID                | "tok2" with "export_id" replaced by a new UUID and the MAC kept  | "catalog_public"  | 2       | 2     |
        | its payload transaction nonce        | "tok2" with "transaction_nonce" replaced and the MAC kept        | "catalog_public"  | 2       | 2     |
        | its payload boundary                 | "tok2" with "snapshot_boundary" replaced and the MAC kept        | "catalog_public"  | 2       | 2     |
        | the scope it is presented for        | "tok2"                                                           | "manuals_public"  | 2       | 2     |
        | the ordinal argument                 | "tok2"                                                           | "catalog_public"  | 3       | 2     |
        | the limit argument                   | "tok2"                                                           | "catalog_public"  | 2       | 5     |

    @negative @cap:seed @cap:sourceSql
    Scenario: A page token is refused in a later export transaction on the same connection
      Given seed connection "S1" runs "BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE"
      And seed connection "S1" has called the portable seed manifest function with page limit 2 and kept the page token of "catalog_public" as "tok0"
      And seed connection "S1" runs "COMMIT"
      And seed connection "S1" runs "BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE"
      And seed connection "S1" has called the portable seed manifest function with page limit 2
      When seed connection "S1" calls the seed scope function with "tok0" for "catalog_public" at ordinal 0 with limit 2
      Then the page call fails with error code "invalid_request" or an SQL error

  Rule: A receipt becomes a client-bound cursor only through an authenticated connect that validates current assignment and state

    @cap:seed
    Scenario: Each client converting the same receipt gets its own cursor
      Given the operator has exported a portable seed to "seed-1.sqlite" with page limit 2
      When the harness client "H1" of user "alice" connects for the first time presenting the schema of "seed-1.sqlite" and its receipts
      And the harness client "H2" of user "bob" connects for the first time presenting the schema of "seed-1.sqlite" and its receipts
      Then each connect lists "catalog_public" and "manuals_public" in "scopes.add" with a nonempty cursor
      And the cursor "H1" received for "catalog_public" differs from the one "H2" received

    @negative @cap:seed
    Scenario: A converted cursor is bound to the client that connected
      Given the operator has exported a portable seed to "seed-1.sqlite" with page limit 2
      And the harness client "H1" of user "alice" has connected for the first time presenting the schema of "seed-1.sqlite" and its receipts
      And the harness client "H2" of user "bob" has connected for the first time presenting the schema of "seed-1.sqlite" and its receipts
      When the harness client "H2" pulls presenting the cursor "H1" received for "catalog_public"
      Then the response status is 400 with error code "invalid_request"

    @negative @cap:seed
    Scenario Outline: A receipt presented <where> is refused
      Given the operator has exported a portable seed to "seed-1.sqlite" with page limit 2
      And the harness client "H" of user "alice" has connected and rebuilt every assigned scope
      And the harness has read the receipt for "catalog_public" from seed artifact "seed-1.sqlite"
      When <request>
      Then the response status is <status> with error code "<code>"
      And the error body has no success members

      Examples:
        | where                              | request                                                                                             | status | code           |
        | as a pull cursor                   | the harness client "H" pulls presenting that receipt as the cursor for "catalog_public"              | 400    | invalid_request |
        | as a rebuild continuation          | the harness client "H" requests a rebuild page of "catalog_public" presenting that receipt as "cursor" | 400    | invalid_request |
        | in a connect without a credential  | the harness sends a raw connect for a fresh client with "seed_receipts" holding that receipt and no "Authorization" header | 401 | auth_required |

    @negative @cap:seed @cap:scopes
    Scenario: A receipt for a scope that is no longer assigned yields no cursor
      Given the operator has exported a portable seed to "seed-1.sqlite" with page limit 2
      And the operator unregisters shared scope "manuals_public"
      When the harness client "H" of user "alice" connects for the first time presenting the schema of "seed-1.sqlite" and its receipts
      Then the response status is 200
      And member "scopes.add" does not list "manuals_public"
      And no entry of "scopes.add" or "scope_cursor_updates" carries a cursor for "manuals_public"
