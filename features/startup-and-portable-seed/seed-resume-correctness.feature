@SYNC-SEED-003 @server @client
Feature: Seed Resume Correctness
  Seeded rows may only be resumed incrementally from the exact point the seed
  was cut. Every portable scope in a seed therefore carries a continuation
  receipt that binds the seeded schema, the registry, membership, retention
  and stream generations, the snapshot boundary, the row count and the scope
  digest. At connect the server checks the receipt against current state. It
  either turns the receipt into a cursor at the seed boundary or answers null,
  and the scope is then rebuilt. A client must never resume a seeded scope
  without such a receipt. The harness compares the seed contents with the
  export manifest and the harness codec. It then checks that a converted
  receipt yields exactly the changes after the boundary, that an outdated
  receipt yields a rebuild, and that a client without a receipt rebuilds.

  Background:
    Given a registered table "products" with columns:
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
    And the operator has exported a portable seed to "seed-1.sqlite" with page limit 2

  Rule: Every seeded portable scope carries verified continuation metadata for the exact schema, generations, boundary, cardinality and digest

    @cap:seed
    Scenario: The seed's continuation metadata matches the export and the seeded rows
      When client "S" of user "alice" is opened on a copy of seed artifact "seed-1.sqlite"
      Then client "S" inspection shows a stored receipt for scope "catalog_public" and no cursor for it
      And the schema version and hash client "S" inspects equal "schema_version" and "schema_hash" of the export manifest
      And the export manifest gives "catalog_public" a "cardinality" of "3" and registry, membership and retention generations as unsigned decimal strings
      And the export manifest gives a "snapshot_boundary" whose "position_kind" is "generation_start" or "transaction_end"
      And the "checksum" of "catalog_public" in the export manifest equals the scope digest the harness codec computes over rows "p1", "p2" and "p3" at versions "P1", "P2" and "P3"

    @cap:seed
    Scenario: A valid receipt resumes at the seed boundary, neither before nor after it
      Given client "W" has pushed an update of product "p3" setting "price_cents" to 650
      And client "W" has pushed an insert of product "p4" named "Tray" priced 900
      When the harness client "H" of user "alice" connects for the first time presenting the schema of "seed-1.sqlite" and its receipts
      Then member "scopes.add" lists "catalog_public" with a nonempty cursor
      When the harness client "H" pulls presenting that cursor for "catalog_public"
      Then the changes for "catalog_public" are exactly the upsert of "p3" with "price_cents" 650 and the upsert of "p4"

    @negative @cap:seed
    Scenario Outline: A receipt whose <binding> no longer holds gets a null cursor, not an error
      Given <change>
      When the harness client "H" of user "alice" connects for the first time presenting the schema of "seed-1.sqlite" and <receipts>
      Then the response status is 200
      And member "scopes.add" lists "catalog_public" with cursor null
      And member "scope_cursor_updates" has no entry for "catalog_public"

      Examples:
        | binding              | change                                                                                         | receipts                                                  |
        | cardinality          | nothing else changed                                                                           | its receipts with one character of the "catalog_public" receipt payload altered |
        | receipt set          | nothing else changed                                                                           | no receipt for "catalog_public"                            |

      @cap:schema
      Examples: schema changed since export
        | binding              | change                                                                                         | receipts     |
        | schema               | the operator publishes a "class_2" manifest that adds nullable column "colour" of type "string" to table "products" | its receipts |

      @cap:provision
      Examples: membership changed since export
        | binding               | change                                                                         | receipts     |
        | membership generation | the operator changes the membership rule of "products" for scope "catalog_public" | its receipts |

      @cap:compaction
      Examples: retention lineage changed since export
        | binding              | change                                                              | receipts     |
        | retention generation | the operator resets the retention lineage of scope "catalog_public" | its receipts |

  Rule: A client never treats seeded rows as incrementally resumable without that metadata

    @negative @cap:seed
    Scenario: A seed without a receipt for a seeded scope is rebuilt, never resumed
      Given a copy of seed artifact "seed-1.sqlite" with the receipt of "catalog_public" removed, saved as "no-receipt.sqlite"
      When client "S" of user "alice" is opened on "no-receipt.sqlite"
      And client "S" syncs
      Then client "S" either refused the artifact with a typed error or sent no "seed_receipts" entry for "catalog_public"
      And no pull of client "S" presented a non-null cursor for "catalog_public" before client "S" completed a rebuild of it from cursor null

    @negative @cap:seed
    Scenario: A client never pulls a seeded scope before its receipt has been converted
      Given client "S" of user "alice" is opened on a copy of seed artifact "seed-1.sqlite"
      And the proxy answers the next 2 connect requests of client "S" with 503 "temporary_unavailable" and "Retry-After: 1"
      When client "S" syncs
      Then the proxy recorded no pull or rebuild request from client "S"
      And client "S" inspection shows no cursor for "catalog_public" and the stored receipt unchanged
