@SYNC-SEED-006 @server
Feature: Verified Portable Seed Artifacts
  A seed ships inside app bundles and is trusted as a starting state, so a
  damaged one would spread to every installation. Before publishing, the
  exporter checks everything: the manifest hash, the exact portable scope
  set, each page's bindings and sequence, each row's version and digest, each
  scope's count and digest, each receipt, and the SQLite file itself. The file
  must pass an integrity check, rebuild the same digests, hold an empty
  queue, complete provenance and no cursor, and need no sidecar file. It must
  also match the SHA-256 recorded for release. It is built in a temporary
  place and moved into position only after every check has passed; any
  failure leaves no artifact. The harness runs the exporter once cleanly and
  checks the result. It then damages one export at a time from outside the
  exporter (the pages and receipts it received, the file it wrote, the bytes
  it hashed) or kills it while it verifies, and expects the refusal to come
  from the check the table names, no new file, and any earlier file at the
  destination unchanged.

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
      | p4 | Tray   | 900         | P4      |
      | p5 | Spoon  | 300         | P5      |

  Rule: The exporter verifies rows, digests, pages, receipts, the SQLite file and its final hash before an atomic publication

    @cap:seed
    Scenario: A clean export publishes a self-contained, verified file
      When the operator exports a portable seed to "seed-1.sqlite" with page limit 2
      Then the file "seed-1.sqlite" exists and no file "seed-1.sqlite-wal", "seed-1.sqlite-shm" or "seed-1.sqlite-journal" exists beside it
      And "PRAGMA integrity_check" on a read-only open of "seed-1.sqlite" returns exactly "ok"
      And the SHA-256 of the bytes of "seed-1.sqlite" equals the hash the export recorded as release evidence
      And the seed artifact "seed-1.sqlite" marks the snapshot complete
      When client "S" of user "alice" is opened on a copy of seed artifact "seed-1.sqlite"
      Then client "S" inspection shows rows "p1" to "p5" of "products" with server versions "P1" to "P5"
      And client "S" inspection shows provenance "catalog_public" for each of them
      And client "S" inspection shows no mutation, no sealed batch and no cursor
      And client "S" inspection shows a stored receipt for "catalog_public"
      And the scope digest the harness codec computes over the rows client "S" holds equals the "checksum" of "catalog_public" in the export manifest

  Rule: Any failed or skipped check produces no artifact

    @negative @cap:seed
    Scenario Outline: An export with <fault> publishes nothing (caught by the <check> check)
      Given the destination "seed-1.sqlite" already holds an earlier artifact whose SHA-256 the harness recorded
      And the harness arranges "<fault>" for the next export, from outside the exporter
      When the operator exports a portable seed to "seed-1.sqlite" with page limit 2
      Then the export is refused by the "<check>" check
      And "seed-1.sqlite" is byte-identical to the earlier artifact
      And no temporary or sidecar file of the export remains in the destination directory

      Examples:
        | fault                                          | check                    |
        | one row dropped from a page                    | cardinality and digest   |
        | one field value altered in a record            | row digest               |
        | one record's server_version removed            | row version              |
        | one record's server_version altered            | row digest               |
        | one record's row_checksum altered              | row digest               |
        | the second page skipped                        | page sequence            |
        | the first page delivered twice                 | page sequence            |
        | the receipt's cardinality altered              | receipt                  |
        | the receipt taken from an earlier export       | receipt                  |
        | one pending mutation row written to the file   | queue and provenance     |
        | one provenance row omitted                     | queue and provenance     |
        | a cursor written for "catalog_public"          | queue and provenance     |
        | one page of the SQLite file corrupted on disk  | SQLite integrity         |
        | the file left in WAL mode with a "-wal" file   | sidecar                  |
        | the manifest body altered after hashing        | manifest hash            |
        | the final hash computed over other bytes       | artifact hash            |
        | the exporter killed while verifying the file   | verification not finished |

    @negative @cap:seed
    Scenario: An export into an empty destination that fails leaves the destination empty
      Given the destination "seed-2.sqlite" does not exist
      And the harness arranges "one field value altered in a record" for the next export, from outside the exporter
      When the operator exports a portable seed to "seed-2.sqlite" with page limit 2
      Then the export reports a failure
      And no file "seed-2.sqlite" exists
