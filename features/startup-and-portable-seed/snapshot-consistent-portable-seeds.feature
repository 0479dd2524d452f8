@SYNC-SEED-004 @server @internal
Feature: Snapshot Consistent Portable Seeds
  A seed must describe one moment of the server's history, or its digests,
  row counts and receipts will not match any state a client can resume from.
  All reads for one artifact therefore run on one physical connection, inside
  one SERIALIZABLE READ ONLY DEFERRABLE transaction, over the projections the
  WAL worker has materialized up to the seed's visible durable boundary. Seed
  functions refuse any other transaction mode and any call from another
  transaction or connection. A commit that lands during the export appears
  neither in the pages nor in the digests; clients get it later through
  ordinary incremental pull. The harness calls the seed functions as the seed
  role, on connections it controls, and commits source changes between
  calls.

  Background:
    Given a registered table "products" with columns:
      | column      | type   | key | nullable |
      | id          | string | yes | no       |
      | name        | string | no  | no       |
      | price_cents | int    | no  | no       |
    And table "products" places each row in scope "catalog_public"
    And shared scope "catalog_public" is registered as portable
    And the harness commits on the source database:
      """
      INSERT INTO public.products (id, name, price_cents) VALUES
        ('p1', 'Kettle', 2400), ('p2', 'Teapot', 1800), ('p3', 'Mug', 600), ('p4', 'Tray', 900);
      """
    And capture has materialized every committed source transaction

  Rule: Every read for one artifact happens on one connection in one enforced SERIALIZABLE READ ONLY DEFERRABLE transaction

    @negative @cap:seed @cap:sourceSql
    Scenario Outline: The seed manifest call refuses a transaction begun as <mode>
      Given seed connection "S1" runs "BEGIN TRANSACTION ISOLATION LEVEL <mode>"
      When seed connection "S1" calls the portable seed manifest function with page limit 2
      Then the call fails with an SQL error
      And seed connection "S1" holds no export state

      Examples:
        | mode                                  |
        | REPEATABLE READ READ ONLY DEFERRABLE  |
        | SERIALIZABLE READ WRITE               |
        | SERIALIZABLE READ ONLY NOT DEFERRABLE |
        | READ COMMITTED READ ONLY              |

    @negative @cap:seed @cap:sourceSql
    Scenario: The seed manifest call refuses to run outside an explicit transaction
      When seed connection "S1" calls the portable seed manifest function with page limit 2 in autocommit mode
      Then the call fails with an SQL error

    @negative @cap:seed @cap:sourceSql
    Scenario Outline: A page token is refused <where>
      Given seed connection "S1" runs "BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE"
      And seed connection "S1" has called the portable seed manifest function with page limit 2 and kept the page token of "catalog_public" as "tok"
      When <call>
      Then the page call fails with error code "invalid_request" or an SQL error
      And the page call returned no records

      Examples:
        | where                                         | call                                                                                                                                  |
        | on another connection in its own transaction  | seed connection "S2" runs "BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE" and calls the seed scope function with "tok" for "catalog_public" at ordinal 0 |
        | after its transaction committed               | seed connection "S1" runs "COMMIT", begins a new SERIALIZABLE READ ONLY DEFERRABLE transaction and calls the seed scope function with "tok" for "catalog_public" at ordinal 0 |
        | in autocommit mode on the same connection     | seed connection "S1" runs "COMMIT" and calls the seed scope function with "tok" for "catalog_public" at ordinal 0 in autocommit mode |

    @cap:seed @cap:sourceSql
    Scenario: Repeating the manifest call in the same transaction returns the same bytes
      Given seed connection "S1" runs "BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE"
      When seed connection "S1" calls the portable seed manifest function with page limit 2 twice
      Then both calls return byte-identical results

  Rule: The seed reads WAL-materialized projections exactly through its visible durable boundary, never live source state

    @negative @cap:seed @cap:sourceSql @cap:capture
    Scenario: A committed but not yet materialized change stays out of the seed
      Given the capture worker is paused
      And the harness commits on the source database:
        """
        UPDATE public.products SET price_cents = 2500 WHERE id = 'p1';
        """
      When the operator exports a portable seed to "seed-1.sqlite" with page limit 2
      Then the seed artifact "seed-1.sqlite" holds row "p1" of "products" with "price_cents" 2400
      And the export manifest "snapshot_boundary" lies before the commit position of that update
      When the capture worker resumes
      And capture has materialized every committed source transaction
      And client "S" of user "alice" is opened on a copy of seed artifact "seed-1.sqlite"
      And client "S" syncs
      Then the pulls of client "S" delivered for "catalog_public" exactly the upsert of "p1" with "price_cents" 2500

  Rule: Commits after the snapshot never reach the pages, digests or receipts of the running export

    @negative @cap:seed @cap:sourceSql
    Scenario: Commits between page calls leave later pages and the digest unchanged
      Given seed connection "S1" runs "BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE"
      And seed connection "S1" has called the portable seed manifest function with page limit 2 and kept the page token of "catalog_public" as "tok"
      And seed connection "S1" has called the seed scope function with "tok" for "catalog_public" at ordinal 0 and kept the next token as "tok2"
      When the harness commits on the source database:
        """
        UPDATE public.products SET name = 'Big Mug' WHERE id = 'p3';
        DELETE FROM public.products WHERE id = 'p4';
        INSERT INTO public.products (id, name, price_cents) VALUES ('p5', 'Spoon', 300);
        """
      And capture has materialized every committed source transaction
      And seed connection "S1" calls the seed scope function with "tok2" for "catalog_public" at ordinal 2
      Then the page holds rows "p3" with name "Mug" and "p4", with "has_more" false and "page_token" null
      And the scope digest the harness codec computes over all records of both pages equals the "checksum" of "catalog_public" in the manifest result
      And the manifest result gives "catalog_public" a "cardinality" of "4"
