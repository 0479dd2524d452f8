@SYNC-MUT-016 @server @client
Feature: Mutation Outcome Schema Binding
  Each mutation outcome names the schema manifest (outcome_schema, a version
  and a hash) under which the server classified the mutation and encoded its
  row and row_checksum. A first execution binds the request schema; a replay,
  whether of the whole batch or of one mutation carried in a new batch, keeps
  the binding stored the first time, so one response can mix schemas. The
  client checks each returned row under the manifest the outcome names, not
  under its current one, and never writes a historical row into its tables as
  if it were current state, while keeping every later local intent. The
  harness replays outcomes across a schema change, tampers with the binding
  in the proxy, and inspects what the client applies, keeps and reports.

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
    And the current schema is remembered as "S1"
    And client "W" of user "alice" has connected
    And the server holds these "notes" rows, created by client "W":
      | id  | owner_id | body  | version |
      | n-1 | alice    | milk  | V1      |

  Rule: every outcome carries the exact outcome_schema used to classify it and encode its row checksum, the request schema on first execution

    @server @cap:provision
    Scenario: all outcomes of a first execution are bound to the request schema
      When client "W" pushes batch "16b00001-0000-4000-8000-000000000001" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body | price |
        | 16a00001-0000-4000-8000-000000000001 | insert    | notes | n-2 |              | alice    | eggs |       |
        | 16a00002-0000-4000-8000-000000000002 | update    | notes | n-1 | "sv-stale"   |          | soy  |       |
        | 16a00003-0000-4000-8000-000000000003 | update    | notes | n-1 | V1           |          |      | 1.234 |
      Then the response status is 200
      And every outcome in the response has outcome_schema equal to "S1"
      And every row_checksum in the response equals the ADR 005 row digest of its server_row under "S1" and its server_version

  Rule: exact and cross-batch replay preserve the original stored binding

    @server @cap:provision @cap:schema
    Scenario: after a schema change, replays keep the old binding while new work uses the new one
      Given client "W" has pushed batch "16b00002-0000-4000-8000-000000000002" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body |
        | 16a00004-0000-4000-8000-000000000004 | insert    | notes | n-3 |              | alice    | figs |
      And the operator publishes a new schema version that adds nullable writable column "tag" of type string to table "notes"
      And the new schema is remembered as "S2"
      And client "W" has connected again and received the new schema
      When client "W" resends batch "16b00002-0000-4000-8000-000000000002" unchanged
      Then the response body is byte-identical to the first response to batch "16b00002-0000-4000-8000-000000000002"
      When client "W" pushes batch "16b00003-0000-4000-8000-000000000003" under the new schema with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | body |
        | 16a00004-0000-4000-8000-000000000004 | insert    | notes | n-3 |              | alice    | figs |
        | 16a00005-0000-4000-8000-000000000005 | insert    | notes | n-4 |              | alice    | kale |
      Then the response status is 200
      And the outcome of mutation "16a00004-0000-4000-8000-000000000004" has outcome_schema "S1" and a server_row without field "tag"
      And the outcome of mutation "16a00005-0000-4000-8000-000000000005" has outcome_schema "S2" and a server_row with field "tag" null
      And every row_checksum in the response equals the ADR 005 row digest of its server_row under its own outcome_schema and server_version

  Rule: a client verifies a historical row under the manifest its outcome names

    @client @cap:provision @cap:schema
    Scenario: a client accepts a replayed outcome bound to its old schema
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And client "A" executes SQL "INSERT INTO notes (id, owner_id, body) VALUES ('n-5', 'alice', 'jam')"
      And the proxy drops the response to the next push of client "A" after the server committed it
      And client "A" syncs
      And the operator publishes a new schema version that adds nullable writable column "tag" of type string to table "notes"
      When client "A" syncs
      Then the proxy delivered to client "A" an outcome for the insert of row "n-5" with outcome_schema "S1"
      And client "A" shows the insert of row "n-5" with status "accepted"
      And client "A" is not in state "error"

    @client @negative @cap:provision
    Scenario Outline: a client refuses an outcome whose binding is <defect>
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'"
      And the proxy will rewrite the next push response to client "A" so that the outcome's <rewrite>
      When client "A" syncs
      Then client "A" is in state "error" with a typed failure of operation "pushing"
      And client "A" query "SELECT body FROM notes WHERE id = 'n-1'" returns:
        | body |
        | oat  |
      And client "A" stores, for row "n-1" of table "notes", the server_version "V1"
      And client "A" still shows the update of row "n-1" with its mutation ID and authored fields

      Examples:
        | defect                 | rewrite                                                                                     |
        | missing                | outcome_schema member is removed                                                            |
        | rewritten              | outcome_schema hash is replaced by 64 "b" characters with version unchanged                 |
        | unavailable            | outcome_schema becomes version 99 with a hash no manifest of the client has                 |
        | checksum-inconsistent  | server_row body becomes "tampered" while row_checksum stays                                 |

  Rule: a client never applies an unsafe historical row as current-schema state and keeps later local intent while reconciling

    @client @negative @cap:provision @cap:schema
    Scenario: a historical row that the current schema cannot hold is not written in place and the later edit survives
      Given client "A" of user "alice" has connected and rebuilt every assigned scope
      And client "A" executes SQL "UPDATE notes SET body = 'oat' WHERE id = 'n-1'"
      And the proxy drops the response to the next push of client "A" after the server committed it
      And client "A" syncs
      And the server publishes a class 3 manifest that adds a column "tag" of type "string" with existing values to table "notes", affecting scope "user:alice"
      And client "A" executes SQL "UPDATE notes SET body = 'soy' WHERE id = 'n-1'"
      And client "A" has been restarted on the same database, so that its next sync connects first
      When client "A" syncs while the proxy pauses pull and rebuild requests
      Then the proxy delivered to client "A" an outcome for the first update of row "n-1" with the old outcome_schema
      And client "A" did not write that outcome's server_row into table "notes"
      And client "A" marks scope "user:alice" as requiring a rebuild under the current schema
      And client "A" query "SELECT body FROM notes WHERE id = 'n-1'" returns:
        | body |
        | soy  |
      And client "A" shows the second update of row "n-1", setting body "soy", with its mutation ID and a status of "pending" or "sealed"
