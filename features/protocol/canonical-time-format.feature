@SYNC-PROTO-001 @server @client
Feature: Canonical Time Format
  Timestamps cross the wire as text, and two peers only agree on an instant if
  they agree on its spelling. Each timestamp field has one assigned form: a
  portable datetime value and a mutation's client_version are always
  YYYY-MM-DDTHH:MM:SS.ffffffZ (UTC, exactly six fraction digits, a capital Z,
  a real calendar date, no leap second); server_time on connect and push
  responses uses that same microsecond Z form; server_time on the operator
  endpoints GET /sync/schema and GET /sync/tables is UTC with a Z suffix and
  three or six fraction digits. An offset such as +00:00, a missing or short
  fraction, or a local time is never canonical, even when it names the same
  instant, because digests and equality checks run over the text.

  The harness checks what each side emits (source rows written with offsets
  must come out normalised to UTC, every recorded timestamp must match its
  field's form) and what each side accepts (the server must refuse
  noncanonical client_version and column values, the client must refuse a page
  or response that carries one, with the row checksum recomputed so that the
  timestamp is the only defect).

  Background:
    Given a registered table "tasks" with columns:
      | column   | type     | key | nullable |
      | id       | string   | yes | no       |
      | owner_id | string   | no  | no       |
      | title    | string   | no  | no       |
      | due_at   | datetime | no  | yes      |
    And table "tasks" places each row in scope "user:{owner_id}"
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  @cap:provision
  Rule: the server emits every datetime value in the exact microsecond UTC form

    @cap:sourceSql
    Scenario Outline: a source timestamp written with an offset is pulled as UTC with six fraction digits
      When the harness commits on the source database:
        """
        INSERT INTO public.tasks (id, owner_id, title, due_at) VALUES ('t-1', 'alice', 'clock', '<source value>'::timestamptz);
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response change for row "t-1" of table "tasks" has field "due_at" equal to "<wire value>"
      And the row checksum of that change verifies against the harness codec

      Examples:
        | source value                  | wire value                  |
        | 2024-02-29 12:34:56+00        | 2024-02-29T12:34:56.000000Z |
        | 2024-02-29 13:34:56.1234+01   | 2024-02-29T12:34:56.123400Z |
        | 2024-03-01 00:30:00.5-02:00   | 2024-03-01T02:30:00.500000Z |
        | 2023-12-31 23:59:59.999999-05 | 2024-01-01T04:59:59.999999Z |
        | 1999-12-31 23:59:59.000001+00 | 1999-12-31T23:59:59.000001Z |

    Scenario: a rebuild record and a push outcome carry the same canonical datetime text
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | owner_id | title | due_at                      |
        | 6f1c2a30-8d4e-4b7a-9c21-0e5d3f7a9b01 | insert    | tasks | t-2 | alice    | plan  | 2024-02-29T23:59:59.999999Z |
      Then the push outcome of mutation "6f1c2a30-8d4e-4b7a-9c21-0e5d3f7a9b01" is "applied"
      And the server_row of that outcome has field "due_at" equal to "2024-02-29T23:59:59.999999Z"
      When capture has materialized every committed source transaction
      And client "A" requests a rebuild of scope "user:alice"
      Then the rebuild record for row "t-2" of table "tasks" has field "due_at" equal to "2024-02-29T23:59:59.999999Z"

  @cap:provision
  Rule: server_time carries the form assigned to its endpoint

    Scenario: connect and push report server_time in the microsecond Z form
      When client "A" connects
      Then the response member "/server_time" matches "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$" and names a valid UTC instant
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | owner_id | title |
        | 1a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c01 | insert    | tasks | t-3 | alice    | time  |
      Then the response member "/server_time" matches "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$" and names a valid UTC instant

    Scenario: the operator schema endpoint reports server_time in UTC with a Z suffix
      When the harness requests GET "/sync/schema"
      Then the response status is 200
      And the response member "/server_time" matches "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.([0-9]{3}|[0-9]{6})Z$" and names a valid UTC instant

  @cap:provision
  Rule: a client stamps client_version in the exact microsecond UTC form

    Scenario: every mutation a client sends carries a canonical client_version
      When client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title) VALUES ('t-4', 'alice', 'first');
        UPDATE tasks SET title = 'second' WHERE id = 't-4';
        """
      And client "A" syncs
      Then every mutation in every push request client "A" sent has "client_version" matching "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z$" and naming a valid UTC instant

    Scenario: a datetime the application writes is pushed in its canonical text
      When client "A" executes SQL:
        """
        INSERT INTO tasks (id, owner_id, title, due_at) VALUES ('t-5', 'alice', 'leap day', '2024-02-29T12:34:56.123456Z');
        """
      And client "A" syncs
      Then the push request client "A" sent for row "t-5" has column "due_at" equal to "2024-02-29T12:34:56.123456Z"

  @cap:provision
  Rule: the server refuses a noncanonical or non-UTC timestamp

    @negative
    Scenario Outline: a push whose client_version is not canonical is refused as a whole
      When client "A" sends its next push request with "/mutations/0/client_version" set to "<client_version>"
      Then the response status is 400 with error code "invalid_request"
      And the response has no member "/accepted" and no member "/rejected"
      And no durable state changed on the server

      Examples:
        | client_version                   | why                        |
        | 2024-02-29T12:34:56Z             | no fraction                |
        | 2024-02-29T12:34:56.123Z         | three fraction digits      |
        | 2024-02-29T12:34:56.1234567Z     | seven fraction digits      |
        | 2024-02-29T12:34:56.123456+00:00 | offset instead of Z        |
        | 2024-02-29T13:34:56.123456+01:00 | non-UTC offset             |
        | 2024-02-29T12:34:56.123456z      | lowercase z                |
        | 2024-02-29 12:34:56.123456Z      | space instead of T         |
        | 2024-02-30T00:00:00.000000Z      | impossible calendar date   |
        | 2024-02-29T23:59:60.000000Z      | leap second                |
        | 2024-02-29T24:00:00.000000Z      | hour 24                    |
        | 2024-02-29T12:34:56.123456       | no zone at all             |

    @negative
    Scenario Outline: a noncanonical datetime column value is rejected before apply
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | owner_id | title | due_at   |
        | 2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e01 | insert    | tasks | t-6 | alice    | bad   | <due_at> |
      And client "A" pulls
      Then the push outcome of mutation "2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e01" is "rejected_terminal" with code "validation_failed"
      And the outcome carries no server_row, no row_checksum and no server_version
      And the pull response lists no change for table "tasks"

      Examples:
        | due_at                           |
        | 2024-02-29T12:34:56Z             |
        | 2024-02-29T12:34:56.123456+00:00 |
        | 2024-02-29T12:34:56.123Z         |
        | 2023-02-29T00:00:00.000000Z      |

  @cap:provision
  Rule: the client refuses a noncanonical or non-UTC timestamp from the server

    @negative @cap:sourceSql
    Scenario Outline: a pulled row with a noncanonical datetime is rejected and nothing of the page is applied
      Given the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title, due_at) VALUES ('t-7', 'alice', 'clock', '2024-02-29T12:34:56.123456Z');
        """
      And the proxy will set "/changes/0/row/due_at" to "<received>" in the next pull response to client "A" and recompute its row checksum
      When client "A" syncs
      Then the sync of client "A" ends with completion "error"
      And client "A" has no row "t-7" in table "tasks"
      And the cursor client "A" stores for scope "user:alice" is unchanged

      Examples:
        | received                         |
        | 2024-02-29T12:34:56.123456+00:00 |
        | 2024-02-29T13:34:56.123456+01:00 |
        | 2024-02-29T12:34:56.123Z         |
        | 2024-02-29T12:34:56Z             |
        | 2024-02-29T23:59:60.000000Z      |

    @negative
    Scenario: a connect response whose server_time is not UTC is refused
      Given the proxy will set "/server_time" to "2026-09-01T10:20:00.000000+02:00" in the next connect response to client "A"
      When the harness kills client "A" and restarts it on the same database
      And client "A" syncs
      Then the sync of client "A" ends with completion "error"
      And client "A" sent no push, pull or rebuild request after that connect
      And no durable state changed on client "A"
