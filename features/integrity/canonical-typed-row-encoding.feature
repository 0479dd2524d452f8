@SYNC-INTEG-001 @server @client
Feature: Canonical Typed Row Encoding
  Row and scope digests are only comparable across PostgreSQL, a Node server,
  a Swift or Kotlin client and the harness if every one of them turns the same
  row under the same manifest into the same octets. That canonical form is
  the typed binary grammar: a type tag and a presence octet per value, fixed
  payloads per type (big-endian integers, IEEE 754 bits for float, canonical
  ASCII text for decimal, datetime, date and time, RFC 8785 text for json,
  decoded octets for bytes), and fields sorted by the octets of their field
  ID. A receiver may only encode what it has validated: a row with an unknown,
  repeated, missing or wrongly typed field, or whose key field disagrees with
  "pk", is refused before anything is applied. Type names in a manifest are
  the eleven portable names, spelled exactly; an alias such as "text",
  "integer", "timestamptz" or "String" is refused, not translated.

  The harness codec, checked against the shared vectors in its own unit tests,
  is the oracle: every row checksum and scope checksum an implementation
  emits or accepts must equal the digest the codec computes from the same
  manifest and row. Receivers are tested by giving them malformed rows and
  manifests (the proxy recomputes checksums and manifest hashes the way a
  lenient decoder would, so that the malformation is the only defect).

  Background:
    Given a registered table "records" with columns:
      | column | type    | key | nullable | precision | scale |
      | id     | string  | yes | no       |           |       |
      | owner  | string  | no  | no       |           |       |
      | note   | string  | no  | yes      |           |       |
      | n      | int     | no  | yes      |           |       |
      | big    | int64   | no  | yes      |           |       |
      | price  | decimal | no  | yes      | 10        | 4     |
      | ratio  | float   | no  | yes      |           |       |
      | flag   | boolean | no  | yes      |           |       |
      | at     | datetime | no | yes      |           |       |
      | day    | date    | no  | yes      |           |       |
      | clock  | time    | no  | yes      |           |       |
      | doc    | json    | no  | yes      |           |       |
      | blob   | bytes   | no  | yes      |           |       |
    And table "records" places each row in scope "user:{owner}"
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  @cap:provision
  Rule: the same manifest and complete row produce identical canonical typed bytes everywhere

    @cap:sourceSql
    Scenario Outline: a source value reaches the wire in canonical form and its digest matches the codec
      When the harness commits on the source database:
        """
        INSERT INTO public.records (id, owner, <column>) VALUES ('r-1', 'alice', <source literal>);
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response change for row "r-1" of table "records" has field "<column>" equal to the JSON value <wire JSON>
      And the row checksum of that change verifies against the harness codec

      Examples: numbers
        | column | source literal                 | wire JSON              |
        | n      | -2147483648                    | -2147483648            |
        | n      | 2147483647                     | 2147483647             |
        | big    | 9007199254740993               | "9007199254740993"     |
        | big    | -9223372036854775808           | "-9223372036854775808" |
        | price  | 1.2300                         | "1.23"                 |
        | price  | 0.0000                         | "0"                    |
        | price  | -0.5000                        | "-0.5"                 |
        | price  | 123456.0001                    | "123456.0001"          |
        | ratio  | 0.1                            | 0.1                    |
        | ratio  | 1.0                            | 1                      |
        | ratio  | 1e21                           | 1e+21                  |
        | ratio  | '-0'::float8                   | 0                      |
        | ratio  | 5e-324                         | 5e-324                 |

      Examples: text, time and structured values
        | column | source literal                          | wire JSON                          |
        | note   | U&'e\\0301'                             | "e\u0301"                          |
        | note   | U&'\\00e9'                              | "\u00e9"                           |
        | note   | ''                                      | ""                                 |
        | flag   | false                                   | false                              |
        | at     | '2024-02-29 12:34:56.123456+00'         | "2024-02-29T12:34:56.123456Z"      |
        | day    | '2024-02-29'                            | "2024-02-29"                       |
        | clock  | '23:59:59.000001'                       | "23:59:59.000001"                  |
        | clock  | '08:00'                                 | "08:00:00.000000"                  |
        | doc    | '{"b":1,"a":[1.0,true,null]}'           | "{\"a\":[1,true,null],\"b\":1}"    |
        | doc    | 'null'                                  | "null"                             |
        | blob   | '\\x010203'                             | "AQID"                             |
        | blob   | '\\x'                                   | ""                                 |
        | note   | NULL                                    | null                               |

    Scenario: a push outcome row is digested under its outcome schema exactly as the codec does
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table   | pk  | owner | note | n  | big                 | price | ratio | flag | at                          | day        | clock           | doc                     | blob |
        | e4f5a6b7-c8d9-4e0a-8f2b-a6b7c8d9e001 | insert    | records | r-2 | alice | héllo | 42 | -9223372036854775808 | 1.23  | 0.1   | true | 2024-02-29T12:34:56.123456Z | 2024-02-29 | 23:59:59.000001 | {"a":1,"b":[true,null]} | AQID |
      Then the push outcome of mutation "e4f5a6b7-c8d9-4e0a-8f2b-a6b7c8d9e001" is "applied"
      And the row checksum of that outcome equals the digest the harness codec computes from its outcome_schema, table, pk, server_row and server_version

    @property
    Scenario: for many generated rows the server and the codec agree on every digest
      When the harness pushes 200 generated rows to table "records", each field drawn from its portable type with nulls, range boundaries, decimals at the declared precision and scale, binary64 edge values, nested JSON and non-ASCII text
      And capture has materialized every committed source transaction
      And client "A" requests a rebuild of scope "user:alice" and fetches every page
      Then every push outcome row checksum and every rebuild record row checksum equals the harness codec digest
      And the final rebuild checksum equals the scope digest the harness codec computes over the rebuilt records

    @cap:sourceSql
    Scenario: a client computes the same scope digest as the server and the codec
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.records (id, owner, note, n, big, price, ratio, flag, at, day, clock, doc, blob)
        VALUES ('r-3', 'alice', U&'h\00e9llo', 42, -9223372036854775808, 1.23, 0.1, true, '2024-02-29 12:34:56.123456+00', '2024-02-29', '23:59:59.000001', '{"a":1,"b":[true,null]}', '\x010203'),
               ('r-4', 'alice', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        """
      When client "A" syncs
      Then client "A" reports for scope "user:alice" a local checksum equal to the checksum in the terminal pull response
      And that checksum equals the scope digest the harness codec computes over the rows the server sent

  @cap:provision
  Rule: a receiver rejects unknown, duplicate, omitted, mistyped or key-mismatched fields before apply

    @negative
    Scenario Outline: the server refuses a pushed row value that is not canonical for its type
      When client "A" pushes mutation "f5a6b7c8-d9e0-4f1a-9a3c-b7c8d9e0f101" inserting row "r-5" of table "records" with columns "owner" = "alice" and "<column>" = the JSON value <value>
      Then the server refuses mutation "f5a6b7c8-d9e0-4f1a-9a3c-b7c8d9e0f101" before applying it, with a 400 "invalid_request" for the whole request or the outcome "rejected_terminal" with code "validation_failed"
      And the source table "records" has no row "r-5"

      Examples:
        | column | value                    | defect                                  |
        | n      | "42"                     | int sent as a string                    |
        | n      | 42.0                     | int with a fraction                     |
        | n      | 4.2e1                    | int with an exponent                    |
        | n      | 2147483648               | int out of range                        |
        | big    | 42                       | int64 sent as a JSON number             |
        | big    | "007"                    | int64 with leading zeros                |
        | big    | "+1"                     | int64 with a plus sign                  |
        | big    | "9223372036854775808"    | int64 out of range                      |
        | price  | "1.2300"                 | decimal with trailing zeros             |
        | price  | "1e2"                    | decimal with an exponent                |
        | price  | 1.5                      | decimal sent as a JSON number           |
        | price  | "1234567.1"              | more integer digits than precision allows |
        | ratio  | "0.1"                    | float sent as a string                  |
        | flag   | 1                        | boolean sent as a number                |
        | flag   | "true"                   | boolean sent as a string                |
        | at     | "2024-02-29T12:34:56Z"   | datetime without six fraction digits    |
        | day    | "2024-02-30"             | impossible date                         |
        | clock  | "24:00:00.000000"        | hour 24                                 |
        | doc    | "{\"b\":1,\"a\":2}"      | json not in RFC 8785 member order       |
        | doc    | {"a":1}                  | json sent as an object, not a string    |
        | blob   | "AQI="                   | bytes with padding                      |
        | blob   | "AQ+/"                   | standard base64 alphabet                |

    @negative
    Scenario Outline: the server refuses a mutation whose key or field set is malformed
      When client "A" sends its next push request inserting row "r-6" with <malformation>
      Then the response is <outcome>
      And the source table "records" has no row "r-6"

      Examples:
        | malformation                                                           | outcome                                                                      |
        | "/mutations/0/pk" set to {"id":6}                                       | status 400 with error code "invalid_request"                                 |
        | "/mutations/0/pk" set to {"owner":"r-6"}                                | status 400 with error code "invalid_request"                                 |
        | "/mutations/0/pk" set to {"id":"r-6","owner":"alice"}                   | status 400 with error code "invalid_request"                                 |
        | the member "note" written twice inside "/mutations/0/columns"           | status 400 with error code "invalid_request"                                 |
        | "/mutations/0/columns/id" set to "r-7"                                  | a 200 whose outcome is "rejected_terminal" with code "validation_failed"     |
        | "/mutations/0/columns/colour" set to "red"                              | a 200 whose outcome is "rejected_terminal" with code "validation_failed" or "schema_incompatible" |

    @negative @cap:sourceSql
    Scenario Outline: a client refuses a pulled row that is malformed and applies nothing of the page
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.records (id, owner, note, n, big, flag) VALUES ('r-8', 'alice', 'x', 1, '2', true), ('r-9', 'alice', 'y', 2, '3', false);
        """
      And the proxy will apply <malformation> to the change for row "r-9" in the next pull response to client "A", recomputing its row checksum as a lenient decoder would read the row
      When client "A" syncs
      Then the sync of client "A" ends with completion "error"
      And client "A" has neither row "r-8" nor row "r-9" in table "records"
      And the cursor client "A" stores for scope "user:alice" is unchanged

      Examples:
        | malformation                                   | defect                     |
        | adding the member "colour" with value "red"    | unknown field              |
        | removing the member "note"                     | omitted field              |
        | writing the member "note" twice                | duplicate field            |
        | setting "n" to "2"                             | int as a string            |
        | setting "big" to 3                             | int64 as a number          |
        | setting "flag" to 0                            | boolean as a number        |
        | setting "price" to "1.2300"                    | noncanonical decimal       |
        | setting "ratio" to 1.0                         | noncanonical float text    |
        | setting "blob" to "AQI="                       | padded bytes               |
        | setting "doc" to "{\"b\":1,\"a\":2}"           | noncanonical json          |
        | setting "id" to "r-10"                         | row key differs from pk    |
        | setting the pk to {"id":9}                     | pk of the wrong type       |

  @cap:provision
  Rule: manifest type aliases, other casings and physical type names are rejected, not normalized

    Scenario: every manifest the server publishes uses only the eleven portable type names
      When the harness requests GET "/sync/schema"
      And client "B" of user "bob" connects as a fresh client
      Then every "type" in both manifests is one of "string", "int", "int64", "decimal", "float", "boolean", "datetime", "date", "time", "json" and "bytes"
      And field "price" has type "decimal" with precision 10 and scale 4
      And no field other than "price" carries "precision" or "scale"

    @negative
    Scenario Outline: a client refuses a manifest naming a type outside the portable set
      Given the proxy will set the "type" of field "<column>" to "<alias>" in the "schema_definition" of the next connect response to client "B", recomputing the manifest hash in "schema_definition" and "schema"
      When client "B" of user "bob" syncs for the first time
      Then the sync of client "B" ends with completion "error"
      And client "B" reports no installed schema
      And querying the table list on client "B" shows no synced table "records"
      And client "B" sent no pull or rebuild request

      Examples:
        | column | alias            | kind                      |
        | note   | text             | PostgreSQL name           |
        | note   | varchar          | PostgreSQL name           |
        | note   | String           | other casing              |
        | note   | TEXT             | SQLite name               |
        | n      | integer          | alias                     |
        | n      | INT              | other casing              |
        | n      | int4             | PostgreSQL name           |
        | big    | bigint           | PostgreSQL name           |
        | big    | int8             | PostgreSQL name           |
        | price  | numeric          | PostgreSQL name           |
        | ratio  | double precision | PostgreSQL name           |
        | ratio  | REAL             | SQLite name               |
        | flag   | bool             | alias                     |
        | at     | timestamptz      | PostgreSQL name           |
        | at     | timestamp        | alias                     |
        | doc    | jsonb            | PostgreSQL name           |
        | blob   | bytea            | PostgreSQL name           |
        | blob   | BLOB             | SQLite name               |
        | id     | uuid             | alias                     |
