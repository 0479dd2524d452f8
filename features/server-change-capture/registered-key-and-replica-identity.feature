@SYNC-CAP-010 @server @internal
Feature: Registered Key And Replica Identity
  Every component (the fence in the writing backend, the WAL worker in its own
  backend, clients, digests) names a row by the text form of one key column.
  That only works when the key is a single, non-null, immediate primary key of
  a built-in type whose text form does not depend on session settings, when
  PostgreSQL's replica identity is that same key, and when the key of an
  existing row never changes in place. Registration refuses every other shape,
  the source triggers and the capture fence refuse key changes with SQLSTATE
  23514, and drift after registration blocks capture. The harness registers
  tables of each shape, issues key-changing writes through SQL and push, and
  checks error codes, SQLSTATEs, the manifest key type and what clients pull.

  Rule: an active registered relation has exactly one non-null primary-key column of portable type string, int or int64, with REPLICA IDENTITY DEFAULT backed by it

    @cap:provision @cap:sourceSql @cap:schema
    Scenario Outline: a <sql_type> primary key is accepted and published as portable type "<portable>"
      Given the source database has a table:
        """
        CREATE TABLE public.k (id <sql_type> PRIMARY KEY, owner_id text NOT NULL);
        """
      When the operator registers table "public.k" with primary key "id" and push policy "disabled"
      Then the registration succeeds
      And the manifest key field of table "k" has type "<portable>"

      Examples:
        | sql_type          | portable |
        | smallint          | int      |
        | integer           | int      |
        | bigint            | int64    |
        | text              | string   |
        | character varying | string   |
        | character(8)      | string   |
        | uuid              | string   |
        | inet              | string   |
        | cidr              | string   |
        | macaddr           | string   |
        | macaddr8          | string   |
        | int4range         | string   |
        | int8range         | string   |
        | numrange          | string   |
        | int4multirange    | string   |
        | int8multirange    | string   |
        | nummultirange     | string   |

    @negative @cap:provision @cap:sourceSql
    Scenario Outline: a table with <shape> is refused
      Given the source database has a table:
        """
        <ddl>
        """
      When the operator registers table "public.k" with primary key "id" and push policy "disabled"
      Then the registration fails with error code "invalid_registration" and reason "<reason>"
      And the error carries no row values
      And no new active registry generation exists

      Examples:
        | shape                              | ddl                                                                                                              | reason                        |
        | no primary key                     | CREATE TABLE public.k (id text NOT NULL, owner_id text);                                                         | missing_primary_key           |
        | a composite primary key            | CREATE TABLE public.k (id text, part int, owner_id text, PRIMARY KEY (id, part));                                | composite_primary_key         |
        | only a unique index on the key     | CREATE TABLE public.k (id text NOT NULL UNIQUE, owner_id text);                                                  | missing_primary_key           |
        | a partial unique index as key      | CREATE TABLE public.k (id text NOT NULL, owner_id text); CREATE UNIQUE INDEX k_id ON public.k (id) WHERE id <> ''; | missing_primary_key           |
        | REPLICA IDENTITY FULL              | CREATE TABLE public.k (id text PRIMARY KEY, owner_id text); ALTER TABLE public.k REPLICA IDENTITY FULL;          | unsupported_replica_identity  |
        | REPLICA IDENTITY NOTHING           | CREATE TABLE public.k (id text PRIMARY KEY, owner_id text); ALTER TABLE public.k REPLICA IDENTITY NOTHING;       | unsupported_replica_identity  |
        | REPLICA IDENTITY USING INDEX       | CREATE TABLE public.k (id text PRIMARY KEY, owner_id text NOT NULL); CREATE UNIQUE INDEX k_o ON public.k (owner_id); ALTER TABLE public.k REPLICA IDENTITY USING INDEX k_o; | unsupported_replica_identity |

  Rule: the primary key is not deferrable

    @negative @cap:provision @cap:sourceSql
    Scenario Outline: a <mode> primary key is refused
      Given the source database has a table:
        """
        CREATE TABLE public.k (id text PRIMARY KEY <mode>, owner_id text);
        """
      When the operator registers table "public.k" with primary key "id" and push policy "disabled"
      Then the registration fails with error code "invalid_registration"
      And no new active registry generation exists

      Examples:
        | mode                          |
        | DEFERRABLE INITIALLY IMMEDIATE |
        | DEFERRABLE INITIALLY DEFERRED  |

  Rule: a registration with push policy enabled does not use a database-generated key

    @negative @cap:provision @cap:sourceSql
    Scenario Outline: a key <generated> is refused when push is enabled and accepted when it is disabled
      Given the source database has a table:
        """
        CREATE TABLE public.k (id <column>, owner_id text);
        """
      When the operator registers table "public.k" with primary key "id" and push policy "enabled"
      Then the registration fails with error code "invalid_registration"
      And no new active registry generation exists
      When the operator registers table "public.k" with primary key "id" and push policy "disabled"
      Then the registration succeeds

      Examples:
        | generated                     | column                                            |
        | generated always as identity  | bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY   |
        | generated by default as identity | bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY |
        | filled by a column default    | uuid DEFAULT gen_random_uuid() PRIMARY KEY        |

  Rule: the key column type is one of the built-in key types

    @negative @cap:provision @cap:sourceSql
    Scenario Outline: a primary key of type <sql_type> is refused as an unsupported key type
      Given the source database has a table:
        """
        <prelude> CREATE TABLE public.k (id <sql_type> PRIMARY KEY, owner_id text);
        """
      When the operator registers table "public.k" with primary key "id" and push policy "disabled"
      Then the registration fails with error code "invalid_registration" and reason "unsupported_primary_key_type"
      And no new active registry generation exists

      Examples:
        | sql_type         | prelude                                        |
        | numeric          |                                                |
        | double precision |                                                |
        | boolean          |                                                |
        | timestamptz      |                                                |
        | date             |                                                |
        | interval         |                                                |
        | tstzrange        |                                                |
        | jsonb            |                                                |
        | bytea            |                                                |
        | public.key_text  | CREATE DOMAIN public.key_text AS text;         |

  Rule: synced mutation validation and the source trigger reject a key change before any fence or row effect

    @negative @cap:provision @cap:capture
    Scenario: a pushed update that writes the key field is rejected and the row is unchanged
      Given a registered table "tasks" with columns:
        | column   | type   | key |
        | id       | string | yes |
        | owner_id | string | no  |
        | title    | string | no  |
      And table "tasks" places each row in scope "user:{owner_id}"
      And user "alice" is assigned scope "user:alice"
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'keep');
        """
      And client "A" of user "alice" has connected and rebuilt every assigned scope
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version                 | id  | title   |
        | 4d6e8f0a-3c5b-4e7d-8f9a-1b2c3d4e5f03 | update    | tasks | t-1 | current                      | t-9 | renamed |
      Then the rejected outcome of mutation "4d6e8f0a-3c5b-4e7d-8f9a-1b2c3d4e5f03" has status "rejected_terminal" and code "validation_failed"
      And server inspection shows no write fence for mutation "4d6e8f0a-3c5b-4e7d-8f9a-1b2c3d4e5f03"
      And the source row "t-1" of table "tasks" still has title "keep"

  Rule: the capture fence also rejects a key change with SQLSTATE 23514, including one made by a later BEFORE UPDATE trigger or a partition row move

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario Outline: <case> fails with SQLSTATE 23514 and leaves no WAL effect
      Given a registered table "parts" with columns:
        | column | type   | key |
        | id     | string | yes |
        | region | string | no  |
        | title  | string | no  |
      And <layout>
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.parts (id, region, title) VALUES ('p-1', 'eu', 'keep');
        """
      When the harness runs on the source database:
        """
        <sql>
        """
      Then the statement fails with SQLSTATE "23514"
      And server inspection shows no event, row version or pull effect for a key other than "p-1" in table "parts"

      Examples:
        | case                                            | layout                                                                                                          | sql                                                   |
        | a direct key update                             | the source table "public.parts" is a plain table                                                                | UPDATE public.parts SET id = 'p-2' WHERE id = 'p-1';  |
        | a later BEFORE UPDATE trigger rewriting the key | the source table "public.parts" has a BEFORE UPDATE row trigger "zzz_rekey" that sets NEW.id to 'p-2'           | UPDATE public.parts SET title = 'x' WHERE id = 'p-1'; |
        | a partition row move                            | the source relation of "parts" is range-partitioned by id into "parts_p1" for ids below 'p-2' and "parts_rest" for the rest | UPDATE public.parts SET id = 'p-2' WHERE id = 'p-1';  |

  Rule: continuing capture after key or replica identity drift, or capturing a key-value update as one event, is a violation

    @negative @cap:provision @cap:sourceSql @cap:capture @cap:inspect
    Scenario Outline: <drift> after registration blocks capture
      Given a registered table "tasks" with columns:
        | column   | type   | key |
        | id       | string | yes |
        | owner_id | string | no  |
        | title    | string | no  |
      And table "tasks" places each row in scope "user:{owner_id}"
      When the harness commits on the source database:
        """
        <sql>
        """
      And the harness commits on the source database and records the commit position as "W":
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-2', 'alice', 'after drift');
        """
      And the capture worker completes 3 polls
      Then server inspection reports the capture check "relation_identity" as "failed"
      And server inspection shows the slot's confirmed position at or before position "W"
      And the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """

      Examples:
        | drift                      | sql                                                                                         |
        | REPLICA IDENTITY FULL      | ALTER TABLE public.tasks REPLICA IDENTITY FULL;                                             |
        | a new composite key        | ALTER TABLE public.tasks DROP CONSTRAINT tasks_pkey, ADD PRIMARY KEY (id, owner_id);        |
        | a deferrable key           | ALTER TABLE public.tasks DROP CONSTRAINT tasks_pkey, ADD PRIMARY KEY (id) DEFERRABLE;       |

    @cap:provision @cap:sourceSql @cap:capture
    Scenario: a key change is never delivered as one moved row; identity changes arrive as a delete and an insert
      Given a registered table "tasks" with columns:
        | column   | type   | key |
        | id       | string | yes |
        | owner_id | string | no  |
        | title    | string | no  |
      And table "tasks" places each row in scope "user:{owner_id}"
      And user "alice" is assigned scope "user:alice"
      And the harness has committed and capture has materialized:
        """
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-1', 'alice', 'old key');
        """
      And client "A" of user "alice" has connected and rebuilt every assigned scope
      When the harness commits on the source database:
        """
        DELETE FROM public.tasks WHERE id = 't-1';
        INSERT INTO public.tasks (id, owner_id, title) VALUES ('t-2', 'alice', 'old key');
        """
      And capture has materialized every committed source transaction
      And client "A" pulls
      Then the pull response lists exactly these changes:
        | scope      | table | op     | pk  |
        | user:alice | tasks | delete | t-1 |
        | user:alice | tasks | upsert | t-2 |
