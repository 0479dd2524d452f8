@SYNC-INTEG-003 @server @client
Feature: Scope Digest Binding
  A scope digest is the evidence that a client holds exactly the rows of a
  scope at a boundary, no more, no fewer, each in the right version. It is one
  standard SHA-256 computation, fed in order and finished once: the
  scope-digest domain, the 32 raw octets of the schema hash, the scope ID as
  length-prefixed text, the row count as a 64-bit big-endian integer, then for
  each row, sorted by the unsigned octets of its complete row identity
  (length prefixes included), the length-prefixed identity followed by the 32
  raw octets of its row digest. No tree, no combination of separately finished
  hashes, no XOR, sum, CRC or other home-made aggregate. A duplicate entry is
  an error, not an input.

  The server's terminal pull checksums, final rebuild checksums and seed
  manifest checksums are compared with the scope digest the harness codec
  computes over the rows the server sent. A client is tested by giving it
  claimed digests that a shortcut implementation would reproduce (an XOR or a
  sum of row digests, a digest with the pairs mismatched or the count off by
  one, rows in another order) and pages with a row dropped or repeated: it
  must refuse to install the digest and the cursor for that scope.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And a registered table "notes" with columns:
      | column   | type   | key |
      | id       | int    | yes |
      | owner_id | string | no  |
      | body     | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And table "notes" places each row in scope "user:{owner_id}"
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  @cap:provision
  Rule: every authoritative scope digest is the standard streaming SHA-256 over schema, scope ID, cardinality and sorted identity and digest pairs

    Scenario: an empty scope has the digest of zero entries
      When client "A" pulls
      Then the response member "/has_more" equals false
      And the checksum for scope "user:alice" in "/checksums" equals the harness codec scope digest of scope "user:alice" with cardinality 0 under the current manifest

    @cap:sourceSql
    Scenario: rows of two tables are ordered by complete row identity, length prefix included
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('b', 'alice', 'second by key'), ('a', 'alice', 'first by key'), ('aa', 'alice', 'longer key');
        INSERT INTO public.notes (id, owner_id, body) VALUES (2, 'alice', 'two'), (10, 'alice', 'ten'), (-1, 'alice', 'minus one');
        """
      When client "A" requests a rebuild of scope "user:alice" and fetches every page
      Then the final rebuild "checksum" equals the harness codec scope digest over the rebuilt records
      And the final rebuild "checksum" differs from each of these mis-sorted variants the codec computes: sorted by table name then key text, sorted by identity without length prefixes, in arrival order reversed

    @cap:sourceSql
    Scenario: the terminal pull checksum and the rebuild checksum agree at the same boundary
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'one'), ('t-2', 'alice', 'two');
        """
      When client "A" pulls
      And client "A" requests a rebuild of scope "user:alice" and fetches every page
      Then the terminal pull checksum of scope "user:alice" equals the final rebuild checksum
      And both equal the harness codec scope digest over rows "t-1" and "t-2" with their current versions

    @property
    Scenario: for many generated scope contents the server's scope digest matches the codec
      When the harness runs 16 rounds, each pushing a generated mix of inserts, updates and deletes over up to 30 keys of tables "tasks" and "notes" with client "A", then rebuilding scope "user:alice" with a generated page limit from 1 to 7
      Then in every round the final rebuild checksum equals the harness codec scope digest over the union of the rebuilt records
      And in every round the cardinality the codec used equals the number of distinct row identities rebuilt

    @cap:sourceSql @cap:seed
    Scenario: a portable seed manifest reports the digest and the cardinality of the records it exports
      Given a registered shared scope "catalog_public" declared portable
      And table "tasks" now also places rows whose owner_id is "catalog" in scope "catalog_public"
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('c-1', 'catalog', 'x'), ('c-2', 'catalog', 'y'), ('c-3', 'catalog', 'z');
        """
      When the harness exports the portable seed pages of scope "catalog_public" in one seed export transaction with page limit 2
      Then the seed manifest entry of scope "catalog_public" has "cardinality" 3
      And its "checksum" equals the harness codec scope digest over the exported records under the export's schema hash

    @cap:sourceSql
    Scenario: a client derives the same scope digest from the rows it holds
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-3', 'alice', 'x');
        INSERT INTO public.notes (id, owner_id, body) VALUES (7, 'alice', 'y');
        """
      When client "A" syncs
      Then client "A" reports for scope "user:alice" a local checksum equal to the checksum in the terminal pull response
      And that checksum equals the scope digest the harness codec computes over the rows the server sent

  @cap:provision @cap:sourceSql
  Rule: a receiver does not accept a duplicate, an omission, a changed pairing, a changed cardinality or a home-made aggregate under the claimed digest

    Background:
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-10', 'alice', 'ten'), ('t-11', 'alice', 'eleven'), ('t-12', 'alice', 'twelve');
        """
      And client "A" has rebuild required for scope "user:alice"

    @negative
    Scenario Outline: a rebuild whose final digest claim does not match the records is not finalized
      Given the proxy will replace the final "checksum" of the next rebuild of scope "user:alice" for client "A" by <claim>
      When client "A" syncs
      Then client "A" reports no final rebuild cursor installed from that attempt for scope "user:alice"
      And client "A" reports scope "user:alice" as requiring rebuild or has started a new attempt with a new rebuild_id
      And client "A" never presented that attempt's "final_scope_cursor" in a pull request

      Examples:
        | claim                                                                                             |
        | the XOR of the three row digests                                                                  |
        | the SHA-256 of the three row digests concatenated in identity order, without identities           |
        | the codec scope digest with the row digests of "t-10" and "t-11" exchanged                        |
        | the codec scope digest with cardinality 4                                                         |
        | the codec scope digest with cardinality 2 over the same three entries                             |
        | the codec scope digest over the entries in descending identity order                              |
        | the codec scope digest computed with scope ID "user:bob"                                          |
        | a SHA-256 tree: the hash of the hashes of each identity and digest pair                           |

    @negative
    Scenario Outline: a rebuild page with a row dropped or repeated does not pass under the server's digest
      Given the proxy will apply <mutation> to the next rebuild response of scope "user:alice" for client "A"
      When client "A" syncs
      Then client "A" reports no final rebuild cursor installed from that attempt for scope "user:alice"
      And client "A" never presented that attempt's "final_scope_cursor" in a pull request

      Examples:
        | mutation                                  |
        | dropping the record of row "t-11"         |
        | repeating the record of row "t-11"        |

    @negative
    Scenario: a terminal pull checksum claim built from a home-made aggregate is not installed
      Given client "A" has synced
      And the harness has committed and capture has materialized:
        """
        UPDATE public.tasks SET title = 'ten again' WHERE id = 't-10';
        """
      And the proxy will replace the "checksums" entry of scope "user:alice" in the next terminal pull response to client "A" by the XOR of the row digests client "A" would hold after the page
      When client "A" syncs
      Then client "A" reports scope "user:alice" as requiring rebuild or has rebuilt it within that sync
      And the checksum client "A" stores for scope "user:alice" is never the XOR claim
