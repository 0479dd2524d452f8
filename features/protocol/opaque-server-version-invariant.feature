@SYNC-PROTO-004 @server @client
Feature: Opaque Server Version Invariant
  A server_version says one thing only: "this is the row state the server
  knows under this name". The server mints it; clients and adapters store it,
  send it back as base_version and compare it for byte equality, nothing
  more. Its shape is fixed so that a client can size a worst-case request: 1
  to 64 octets, each printable ASCII from 0x20 to 0x7E except the double
  quote (0x22) and the backslash (0x5C), so it is written on the wire without
  any escape and its JSON string always takes its length plus 2 octets. A
  version that leaves this shape, that a client generated or altered, or that
  the server derived from what the client sent breaks compare-and-swap.

  The harness checks the shape and the raw JSON bytes of every version the
  server emits, refuses base_version values outside the shape, shows that a
  version is never taken from client data, and lets the proxy rename the
  versions a client receives with aliases built to trip parsing, numeric or
  lexical ordering and timestamp comparison (the proxy keeps row and scope
  checksums consistent with the alias). A client passes when it sends back the
  latest alias it received for the row, exactly.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  @cap:provision
  Rule: server_version is a server-generated equality token of 1 through 64 octets

    Scenario: every version the server emits has the portable shape
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | owner_id | title |
        | 5a6b7c8d-9eaf-4b01-8c2d-3e4f5a6b7c01 | insert    | tasks | t-1 | alice    | one   |
      And client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version | title |
        | 5a6b7c8d-9eaf-4b01-8c2d-3e4f5a6b7c02 | update    | tasks | t-1 | current      | two   |
      And capture has materialized every committed source transaction
      And client "A" pulls
      And client "A" requests a rebuild of scope "user:alice"
      Then every "server_version" the proxy recorded in push outcomes, pull changes and rebuild records matches "^[\x20\x21\x23-\x5B\x5D-\x7E]{1,64}$"

    @property @cap:sourceSql
    Scenario: every applied write gets a version never seen before for that row
      Given client "A" has pushed an insert of row "t-2" and holds its server version
      When the harness applies to row "t-2" of table "tasks" 15 generated writes, each chosen at random among a push update, a push update that repeats the previous title, and a direct source update
      And capture has materialized every committed source transaction
      Then the 15 versions the server reported for row "t-2" are pairwise different
      And none of them equals the base_version of the write that produced it

  @cap:provision
  Rule: each octet is printable ASCII other than the double quote and the backslash, so the JSON string takes the length plus 2 octets

    Scenario: the raw bytes of each emitted version carry no escape
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | owner_id | title |
        | 6b7c8d9e-afb0-4c12-9d3e-4f5a6b7c8d01 | insert    | tasks | t-3 | alice    | raw   |
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then for every "server_version" in the recorded response bytes, the raw JSON string token is exactly its decoded length plus 2 octets long

    @negative
    Scenario Outline: a base_version outside the portable shape is refused as a whole request
      Given client "A" has pushed an insert of row "t-4" and holds its server version
      And capture has materialized every committed source transaction
      When client "A" sends its next push request updating row "t-4" with "/mutations/0/base_version" set to <base_version>
      Then the response status is 400 with error code "invalid_request"
      And no durable state changed on the server

      Examples:
        | base_version                                                        | why                          |
        | ""                                                                  | empty                        |
        | "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" | 65 octets                    |
        | "sv\"1"                                                             | contains a double quote      |
        | "sv\\\\1"                                                           | contains a backslash         |
        | "sv\u001f1"                                                         | control character 0x1F       |
        | "sv\u007f1"                                                         | DEL 0x7F                     |
        | "sv\u00e91"                                                         | non-ASCII octets             |
        | 17                                                                  | a number instead of a string |

    Scenario: a well-formed base_version of exactly 64 octets reaches compare-and-swap
      Given client "A" has pushed an insert of row "t-4" and holds its server version
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version                                                     | title |
        | 7c8d9eaf-b0c1-4d23-8e4f-5a6b7c8d9e01 | update    | tasks | t-4 | ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~ | late  |
      Then the push outcome of mutation "7c8d9eaf-b0c1-4d23-8e4f-5a6b7c8d9e01" is "conflict" with code "version_conflict"

  @cap:provision
  Rule: clients and adapters do not parse, sort, increment, timestamp-compare or generate a version

    @negative @cap:sourceSql
    Scenario Outline: the client sends back the latest version it received, whatever it looks like
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-5', 'alice', 'v1');
        """
      And the proxy aliases the server versions of row "t-5" of table "tasks" sent to client "A" in issue order:
        | alias    |
        | <first>  |
        | <second> |
      When client "A" syncs
      And the harness commits on the source database:
        """
        UPDATE public.tasks SET title = 'v2' WHERE id = 't-5';
        """
      And capture has materialized every committed source transaction
      And client "A" syncs
      And client "A" executes SQL:
        """
        UPDATE tasks SET title = 'local' WHERE id = 't-5';
        """
      And client "A" syncs
      Then the push request client "A" sent for row "t-5" carried "base_version" equal to <second>
      And the push outcome for row "t-5" is "applied"

      Examples:
        | first                         | second                        | trap                                 |
        | "9"                           | "10"                          | numeric order agrees, lexical does not |
        | "10"                          | "9"                           | numeric order runs backwards         |
        | "2026-09-01T08:00:00.000000Z" | "2020-01-01T00:00:00.000000Z" | looks like an older timestamp        |
        | "b"                           | "a"                           | lexical order runs backwards         |
        | "v 7 "                        | "v 7"                         | differs only by a trailing space     |

    Scenario: every base_version a client sends was issued by the server for that same row
      When client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t-6', 'alice', 'one');
        """
      And client "A" syncs
      And client "A" executes SQL:
        """
        UPDATE tasks SET title = 'two' WHERE id = 't-6';
        """
      And client "A" syncs
      And client "A" executes SQL:
        """
        DELETE FROM tasks WHERE id = 't-6';
        """
      And client "A" syncs
      Then every "base_version" in every push request client "A" sent equals a "server_version" the server sent to client "A" for the same table and primary key
      And no insert client "A" sent carries a "base_version"

  @cap:provision
  Rule: no server version is derived from client data

    @negative
    Scenario: versions do not follow client_version, mutation identity or row content
      When client "A" pushes a batch whose mutations all carry the client_version "2026-09-01T08:00:00.000000Z":
        | mutation_id                          | operation | table | pk  | owner_id | title |
        | 8d9eafb0-c1d2-4e34-9f5a-6b7c8d9eaf01 | insert    | tasks | t-7 | alice    | same  |
        | 8d9eafb0-c1d2-4e34-9f5a-6b7c8d9eaf02 | insert    | tasks | t-8 | alice    | same  |
      Then the server versions of the two outcomes differ
      And neither server version contains "2026-09-01", "8d9eafb0-c1d2-4e34-9f5a-6b7c8d9eaf01", "8d9eafb0-c1d2-4e34-9f5a-6b7c8d9eaf02" or "same"

    @negative
    Scenario: a client-chosen version is never adopted as the row version
      Given client "A" has pushed an insert of row "t-9" and holds its server version
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version  | title  |
        | 9eafb0c1-d2e3-4f45-8a6b-7c8d9eafb001 | update    | tasks | t-9 | client-made-1 | forged |
      Then the push outcome of mutation "9eafb0c1-d2e3-4f45-8a6b-7c8d9eafb001" is "conflict" with code "version_conflict"
      And the outcome's server_version equals the version client "A" held for row "t-9"
