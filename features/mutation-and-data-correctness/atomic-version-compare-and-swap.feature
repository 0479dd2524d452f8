@SYNC-MUT-017 @server @internal
Feature: Atomic Version Compare And Swap
  An update or delete applies only when its base_version is byte for byte the
  current version of the row, and the check, the source write and the version
  fence transition happen under one lock so that nothing can slip in between;
  an insert claims an absent row identity in the same atomic way. The first
  lock on the source row must be the one PostgreSQL itself takes for that
  statement before its BEFORE row triggers: FOR UPDATE for a hard delete and
  for an update or soft delete whose updated columns reach a key column of the
  row's partition, FOR NO KEY UPDATE otherwise and for inserts and rereads. A
  stronger lock would hold up foreign key checks of child rows; a weaker one
  would have to be upgraded mid-statement and invites deadlocks. The harness
  races pushes and direct SQL writes against each other, holds pushes at a gate
  (a BEFORE trigger that waits for an advisory lock the harness holds), and
  probes from a second connection which lock the held push owns.

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
    And client "W" of user "alice" has connected
    And the server holds these "notes" rows, created by client "W":
      | id  | owner_id | body | version |
      | n-1 | alice    | milk | V1      |

  Rule: update and delete compare base_version byte for byte with the current version

    @cap:provision
    Scenario Outline: a base_version that is <variant> of the current version is a version_conflict
      When client "W" pushes a batch with one update of row "n-1" of table "notes" with base_version <variant> of "V1" and columns {"body":"oat"}
      Then the outcome of that mutation is in list "rejected" with status "conflict" and code "version_conflict"
      And that outcome has server_version "V1" and a server_row with body "milk"

      Examples:
        | variant                                         |
        | "V1" followed by one space                      |
        | "V1" without its last octet                     |
        | "V1" with its last octet replaced by another printable octet |
        | "V1" with its letters in the other case         |
        | "V1" preceded by one space                      |

    @cap:provision
    Scenario: the exact current version applies
      When client "W" pushes a batch with one update of row "n-1" of table "notes" with base_version "V1" and columns {"body":"oat"}
      Then the outcome of that mutation is in list "accepted" with status "applied" and code ""

    @cap:provision @cap:sourceSql
    Scenario: a direct SQL write takes the same fence, so the old base loses afterwards
      When the harness commits on the source database:
        """
        UPDATE public.notes SET body = 'direct' WHERE id = 'n-1';
        """
      And client "W" pushes a batch with one update of row "n-1" of table "notes" with base_version "V1" and columns {"body":"oat"}
      Then the outcome of that mutation is in list "rejected" with status "conflict" and code "version_conflict"
      And that outcome has a server_row with body "direct" and a server_version different from "V1"

  Rule: the lock, the comparison, the source transition and the version fence transition are one atomic step

    @cap:provision @cap:sourceSql
    Scenario: eight concurrent updates from the same base apply exactly once
      Given clients "W1" to "W8" of user "alice" have connected
      And the harness holds row "n-1" of table "notes" locked in a source transaction
      When clients "W1" to "W8" each push, at the same moment, one update of row "n-1" of table "notes" with base_version "V1", each setting body to its own client name
      Then exactly 1 of the 8 outcomes is "applied"
      And the other 7 outcomes are conflicts with code "version_conflict" carrying the winner's server_row and server_version
      And the server holds row "n-1" of table "notes" with the winner's body at the winner's server_version

    @cap:provision @cap:sourceSql
    Scenario: a push held after its comparison makes a direct write wait and then win on a fresh version
      Given table "notes" has a gate trigger that holds each push write of row "n-1" until the harness opens the gate
      When client "W" starts pushing one update of row "n-1" of table "notes" with base_version "V1" and columns {"body":"oat"}
      And the push is held at the gate
      And the harness starts a source transaction that runs "UPDATE public.notes SET body = 'direct' WHERE id = 'n-1'"
      Then the source transaction is still waiting for a row lock after 2 seconds
      When the harness opens the gate
      Then the push outcome is "applied"
      And the source transaction commits after the push
      And the server serves row "n-1" of table "notes" with body "direct" at a server_version different from both "V1" and the push's server_version

  Rule: insert reserves an absent row identity atomically

    @cap:provision
    Scenario: eight concurrent inserts of one key apply exactly once
      Given clients "W1" to "W8" of user "alice" have connected
      When clients "W1" to "W8" each push, at the same moment, one insert of row "n-50" of table "notes" with owner_id "alice", each setting body to its own client name
      Then every response has status 200
      And exactly 1 of the 8 outcomes is "applied"
      And the other 7 outcomes are conflicts with code "row_already_exists"
      And no outcome has code "validation_failed"

  Rule: an unlocked check followed by a write, a write after a failed comparison, or two successful reservations is never observed

    @negative @cap:provision
    Scenario: a failed comparison writes nothing
      When client "W" pushes a batch with one update of row "n-1" of table "notes" with base_version "sv-stale" and columns {"body":"oat"}
      And client "W" pushes a batch with one delete of row "n-1" of table "notes" with base_version "sv-stale"
      Then the server holds row "n-1" of table "notes" with body "milk" at version "V1"

    @negative @property @cap:provision
    Scenario: for many generated races at most one writer wins each version
      When the harness runs 50 generated rounds, each racing 2 to 8 clients of user "alice" that push an update or a delete of row "n-1" or an insert of a fresh key shared by the round, all from the version current at the start of the round
      Then in every round at most one update or delete is "applied" per starting version
      And in every round exactly one insert of the shared fresh key is "applied"
      And after every round the row's server_version equals the applied outcome's server_version

  Rule: the first lock of the source row takes the mode PostgreSQL takes for the source statement

    @cap:provision @cap:sourceSql
    Scenario Outline: <operation> locks the row <mode>
      Given a registered table "parents" with columns:
        | column     | type     | key | writable | lifecycle  |
        | id         | string   | yes | no       |            |
        | owner_id   | string   | no  | yes      |            |
        | code       | string   | no  | yes      |            |
        | alias      | string   | no  | yes      |            |
        | note       | string   | no  | yes      |            |
        | deleted_at | datetime | no  | no       | deleted_at |
      And table "parents" places each row in scope "user:{owner_id}"
      And the harness commits on the source database:
        """
        CREATE UNIQUE INDEX parents_code_key ON public.parents (code);
        CREATE UNIQUE INDEX parents_alias_partial ON public.parents (alias) WHERE alias <> '';
        CREATE UNIQUE INDEX parents_note_lower ON public.parents (lower(note));
        CREATE TABLE public.children (id text PRIMARY KEY, parent_id text REFERENCES public.parents (id));
        """
      And client "W" has connected again and received the new schema
      And the server holds these "parents" rows, created by client "W":
        | id  | owner_id | code | alias | note | version |
        | p-1 | alice    | c1   | a1    | x1   | P1      |
      And table "parents" has a gate trigger that holds each push write of row "p-1" until the harness opens the gate
      And the harness holds an open source transaction that ran "INSERT INTO public.children VALUES ('k-1', 'p-1')"
      When client "W" starts pushing <operation>
      Then the push <waits> for the open child insert before reaching the gate
      When the harness commits the open source transaction and opens the gate
      Then the push outcome is "applied"

      Examples:
        | operation                                                                   | mode              | waits       |
        | an update of row "p-1" of table "parents" with base_version "P1" and columns {"code":"c2"}  | FOR UPDATE        | waits       |
        | an update of row "p-1" of table "parents" with base_version "P1" and columns {"alias":"a2"} | FOR NO KEY UPDATE | does not wait |
        | an update of row "p-1" of table "parents" with base_version "P1" and columns {"note":"x2"}  | FOR NO KEY UPDATE | does not wait |
        | a soft delete of row "p-1" of table "parents" with base_version "P1"                        | FOR NO KEY UPDATE | does not wait |

    @cap:provision @cap:sourceSql
    Scenario: a hard delete locks the row FOR UPDATE
      Given a registered table "crates" with columns:
        | column   | type   | key | writable | lifecycle |
        | id       | string | yes | no       |           |
        | owner_id | string | no  | yes      |           |
        | label    | string | no  | yes      |           |
      And table "crates" places each row in scope "user:{owner_id}"
      And the harness commits on the source database:
        """
        CREATE TABLE public.crate_items (id text PRIMARY KEY, crate_id text REFERENCES public.crates (id));
        """
      And client "W" has connected again and received the new schema
      And the server holds these "crates" rows, created by client "W":
        | id  | owner_id | label | version |
        | c-1 | alice    | tools | C1      |
      And the harness holds an open source transaction that ran "INSERT INTO public.crate_items VALUES ('ci-1', 'c-1')"
      When client "W" starts pushing a delete of row "c-1" of table "crates" with base_version "C1"
      Then the push waits for the open child insert
      When the harness rolls back the open source transaction
      Then the push outcome is "applied"

    @cap:provision @cap:sourceSql
    Scenario: an update reaching a stored generated column that is a key column locks FOR UPDATE
      Given a registered table "codes" with columns:
        | column   | type   | key | writable | lifecycle |
        | id       | string | yes | no       |           |
        | owner_id | string | no  | yes      |           |
        | raw      | string | no  | yes      |           |
      And table "codes" places each row in scope "user:{owner_id}"
      And the harness commits on the source database:
        """
        ALTER TABLE public.codes ADD COLUMN norm text GENERATED ALWAYS AS (upper(raw)) STORED;
        CREATE UNIQUE INDEX codes_norm_key ON public.codes (norm);
        CREATE TABLE public.code_refs (id text PRIMARY KEY, code_id text REFERENCES public.codes (id));
        """
      And client "W" has connected again and received the new schema
      And the server holds these "codes" rows, created by client "W":
        | id  | owner_id | raw | version |
        | k-1 | alice    | ab  | K1      |
      And the harness holds an open source transaction that ran "INSERT INTO public.code_refs VALUES ('r-1', 'k-1')"
      When client "W" starts pushing an update of row "k-1" of table "codes" with base_version "K1" and columns {"raw":"cd"}
      Then the push waits for the open child insert
      When the harness commits the open source transaction
      Then the push outcome is "applied"

    @cap:provision @cap:sourceSql
    Scenario: a unique index created after earlier pushes is seen by the next lock mode computation
      Given a registered table "parents" with columns:
        | column   | type   | key | writable | lifecycle |
        | id       | string | yes | no       |           |
        | owner_id | string | no  | yes      |           |
        | code     | string | no  | yes      |           |
      And table "parents" places each row in scope "user:{owner_id}"
      And the harness commits on the source database:
        """
        CREATE TABLE public.children (id text PRIMARY KEY, parent_id text REFERENCES public.parents (id));
        """
      And client "W" has connected again and received the new schema
      And the server holds these "parents" rows, created by client "W":
        | id  | owner_id | code | version |
        | p-1 | alice    | c1   | P1      |
      And client "W" has pushed a batch with one update of row "p-1" of table "parents" with base_version "P1" and columns {"code":"c2"}
      And the server_version of that mutation is remembered as "P2"
      And the harness commits on the source database:
        """
        CREATE UNIQUE INDEX parents_code_key ON public.parents (code);
        """
      And the harness holds an open source transaction that ran "INSERT INTO public.children VALUES ('k-1', 'p-1')"
      When client "W" starts pushing an update of row "p-1" of table "parents" with base_version "P2" and columns {"code":"c3"}
      Then the push waits for the open child insert
      When the harness commits the open source transaction
      Then the push outcome is "applied"

    @cap:provision @cap:sourceSql
    Scenario: the key columns are those of the partition that holds the row
      Given a registered table "events" with columns:
        | column   | type   | key | writable | lifecycle |
        | id       | string | yes | no       |           |
        | owner_id | string | no  | yes      |           |
        | ref      | string | no  | yes      |           |
      And table "events" places each row in scope "user:{owner_id}"
      And the source relation of "events" is range-partitioned by id into "events_lo" for ids below 'e-5' and "events_hi" for the rest, with a unique index on ref only in "events_hi"
      And the harness commits on the source database:
        """
        CREATE TABLE public.event_refs (id text PRIMARY KEY, event_id text REFERENCES public.events (id));
        """
      And client "W" has connected again and received the new schema
      And the server holds these "events" rows, created by client "W":
        | id  | owner_id | ref | version |
        | e-1 | alice    | r1  | E1      |
        | e-7 | alice    | r7  | E7      |
      And table "events" has a gate trigger that holds each push write until the harness opens the gate
      When client "W" starts pushing an update of row "e-1" of table "events" with base_version "E1" and columns {"ref":"r9"}
      And the push is held at the gate
      Then a FOR KEY SHARE lock on row "e-1" of table "events" taken from another connection is granted at once
      When the harness opens the gate
      Then the push outcome is "applied"
      When the harness holds an open source transaction that ran "INSERT INTO public.event_refs VALUES ('x-7', 'e-7')"
      And client "W" starts pushing an update of row "e-7" of table "events" with base_version "E7" and columns {"ref":"r8"}
      Then the push waits for the open child insert before reaching the gate
      When the harness commits the open source transaction and opens the gate
      Then the push outcome is "applied"

    @cap:provision @cap:sourceSql
    Scenario: an insert that meets an existing row rereads it FOR NO KEY UPDATE
      Given the harness holds an open source transaction that ran "SELECT 1 FROM public.notes WHERE id = 'n-1' FOR KEY SHARE"
      When client "W" pushes a batch with one insert of row "n-1" of table "notes" with columns {"owner_id":"alice","body":"again"}
      Then the push does not wait for the open source transaction
      And the outcome of that mutation is in list "rejected" with status "conflict" and code "row_already_exists"

    @cap:provision @cap:sourceSql
    Scenario: a deadlock between two held pushes fails one of them retryably and commits nothing of it
      Given the server holds these "notes" rows, created by client "W":
        | id  | owner_id | body  | version |
        | n-2 | alice    | bread | V2      |
      And client "X" of user "alice" has connected
      And table "notes" has a gate trigger that holds each push write until the harness opens the gate
      When client "W" starts pushing updates of rows "n-1" then "n-2" from bases "V1" and "V2" with body "from W"
      And client "X" starts pushing updates of rows "n-2" then "n-1" from bases "V2" and "V1" with body "from X"
      And the harness opens the gate
      Then one push answers 200 with both updates applied
      And the other push answers 503 with error code "temporary_unavailable" and a valid Retry-After header
      And the server holds rows "n-1" and "n-2" of table "notes" with the body of the push that answered 200
