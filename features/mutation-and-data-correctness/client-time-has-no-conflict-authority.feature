@SYNC-MUT-019 @server @client
Feature: Client Time Has No Conflict Authority
  Every mutation carries client_version, the time the client says the user
  made the change, written as an RFC 3339 UTC timestamp with exactly six
  fraction digits and a Z. It is there for diagnosis only. Device clocks are
  wrong, skewed or manipulated, so that value must not pick a conflict
  winner, become a row version, set the source updated_at, or order writes;
  base_version and request order decide. The harness sends pushes that differ
  only in client_version (equal to server time, in the past, in the future)
  and compares every outcome, row and version; it also checks the form a
  client produces, whatever its local time zone.

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

  Rule: client_version stays a diagnostic RFC 3339 UTC timestamp in the exact microsecond form

    @client @cap:provision
    Scenario Outline: a client in time zone "<zone>" sends client_version in UTC microsecond form
      Given client "A" of user "alice" runs with time zone "<zone>"
      And client "A" of user "alice" has connected and rebuilt every assigned scope
      When client "A" executes SQL "INSERT INTO notes (id, owner_id, body) VALUES ('n-1', 'alice', 'milk')"
      And client "A" syncs
      Then every client_version the proxy recorded from client "A" matches ^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{6}Z$
      And every client_version the proxy recorded from client "A" lies within 5 minutes of the harness's UTC clock at the moment of the write

      Examples:
        | zone          |
        | UTC           |
        | Asia/Kolkata  |
        | America/Adak  |

    @server @negative @cap:provision
    Scenario Outline: a push whose client_version is <form> is refused
      Given client "W" of user "alice" has connected
      When client "W" sends a push request whose only mutation is an insert of row "n-1" of table "notes" with columns {"owner_id":"alice","body":"milk"} and client_version <value>
      Then the response status is 400 with error code "invalid_request"
      And no durable state changed on the server

      Examples:
        | form                         | value                              |
        | without fraction             | "2026-09-01T08:21:10Z"             |
        | with milliseconds            | "2026-09-01T08:21:10.000Z"         |
        | with an offset               | "2026-09-01T10:21:10.000000+02:00" |
        | with a space separator       | "2026-09-01 08:21:10.000000Z"      |
        | an impossible date           | "2026-02-30T08:21:10.000000Z"      |
        | a lowercase z                | "2026-09-01T08:21:10.000000z"      |
        | a number                     | 1788250870                         |
        | null                         | null                               |
        | missing                      | absent                             |

  Rule: client_version never affects conflict choice, row version, source updated_at or write order

    @server @cap:provision
    Scenario Outline: an update with client_version <when> gets the same outcome as any other time
      Given client "W" of user "alice" has connected
      And the server holds these "notes" rows, created by client "W":
        | id  | owner_id | body | version |
        | n-1 | alice    | milk | V1      |
      When client "W" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version | body | client_version   |
        | 19a00001-0000-4000-8000-000000000001 | update    | notes | n-1 | V1           | oat  | <client_version> |
        | 19a00002-0000-4000-8000-000000000002 | update    | notes | n-1 | "sv-stale"   | soy  | <client_version> |
      Then the push outcomes are:
        | mutation_id                          | list     | status   | code             |
        | 19a00001-0000-4000-8000-000000000001 | accepted | applied  |                  |
        | 19a00002-0000-4000-8000-000000000002 | rejected | conflict | version_conflict |
      And the accepted server_row has updated_at within 5 seconds of the response's server_time and different from "<client_version>"
      And the accepted server_version neither equals nor contains "<client_version>"

      Examples:
        | when                     | client_version              |
        | equal to the server time | the harness's current UTC time |
        | one day in the past      | 2026-08-31T08:00:00.000000Z |
        | one day in the future    | 2026-09-02T08:00:00.000000Z |
        | the epoch                | 1970-01-01T00:00:00.000000Z |
        | the last microsecond     | 9999-12-31T23:59:59.999999Z |

    @server @cap:provision
    Scenario Outline: request order, not client time, orders two updates of one row in a batch
      Given client "W" of user "alice" has connected
      And the server holds these "notes" rows, created by client "W":
        | id  | owner_id | body | version |
        | n-1 | alice    | milk | V1      |
      When client "W" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version | body   | client_version |
        | 19a00003-0000-4000-8000-000000000003 | update    | notes | n-1 | V1           | first  | <first time>   |
        | 19a00004-0000-4000-8000-000000000004 | update    | notes | n-1 | V1           | second | <second time>  |
      Then the push outcomes are:
        | mutation_id                          | list     | status   | code             |
        | 19a00003-0000-4000-8000-000000000003 | accepted | applied  |                  |
        | 19a00004-0000-4000-8000-000000000004 | rejected | conflict | version_conflict |
      And the server holds row "n-1" of table "notes" with body "first"

      Examples:
        | first time                  | second time                 |
        | 2026-09-01T09:00:00.000000Z | 2026-09-01T10:00:00.000000Z |
        | 2026-09-01T10:00:00.000000Z | 2026-09-01T09:00:00.000000Z |
        | 2026-09-01T09:00:00.000000Z | 2026-09-01T09:00:00.000000Z |

    @server @negative @cap:provision
    Scenario: a later client time does not beat the current base across clients
      Given client "W" of user "alice" has connected
      And client "X" of user "alice" has connected
      And the server holds these "notes" rows, created by client "W":
        | id  | owner_id | body | version |
        | n-1 | alice    | milk | V1      |
      When client "W" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version | body | client_version              |
        | 19a00005-0000-4000-8000-000000000005 | update    | notes | n-1 | V1           | old  | 2020-01-01T00:00:00.000000Z |
      And client "X" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version | body | client_version              |
        | 19a00006-0000-4000-8000-000000000006 | update    | notes | n-1 | V1           | new  | 2030-01-01T00:00:00.000000Z |
      Then the push outcome of mutation "19a00005-0000-4000-8000-000000000005" is "applied"
      And the rejected outcome of mutation "19a00006-0000-4000-8000-000000000006" has status "conflict" and code "version_conflict"
      And the server holds row "n-1" of table "notes" with body "old"

    @server @negative @property @cap:provision
    Scenario: for many generated pairs of pushes that differ only in client_version the outcomes are the same
      Given client "W" of user "alice" has connected
      When the harness runs 100 generated trials, each on two fresh rows in identical states, pushing the same generated insert, update or delete with a current, stale or absent base to both rows with two client_version values drawn from 0001-01-01T00:00:00.000000Z to 9999-12-31T23:59:59.999999Z
      Then in every trial both outcomes have the same status and code
      And in every trial the two resulting rows are equal in every field except the key and server-owned time fields
