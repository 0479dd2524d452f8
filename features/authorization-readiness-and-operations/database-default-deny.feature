@SYNC-OPS-001 @server @internal
Feature: Database Default Deny
  Everything the extension installs lives in the fixed schema "synchro" and is
  closed to PUBLIC. Each runtime role gets exactly the schema usage, type usage
  and per-signature EXECUTE grants it needs, and no adapter, seed or monitor
  login can touch a metadata table or sequence directly. Any gap lets an
  application login read tokens and ledgers or call functions outside its job.
  The harness reads the catalog through server inspection (privilege functions
  over every object in the schema), connects as a login of each role (and as
  one in no Synchro role, for PUBLIC) to try each call and read, and revokes
  one grant to see the public endpoint depend on it.

  Rule: the fixed synchro schema and every extension-owned object revoke PUBLIC authority

    @cap:provision @cap:inspect
    Scenario: every Synchro object lives in schema "synchro", owned by "synchro_owner"
      Then server inspection shows schema "synchro" and every table, sequence, function and type in it owned by "synchro_owner"
      And server inspection shows every function in schema "synchro" configured with search_path "pg_catalog, synchro"

    @cap:provision @cap:inspect
    Scenario Outline: PUBLIC holds no <privilege> on any <kind> in schema "synchro"
      When the harness counts the <kind> objects in schema "synchro" on which PUBLIC has "<privilege>"
      Then the count is 0

      Examples:
        | kind     | privilege                                   |
        | schema   | USAGE                                       |
        | schema   | CREATE                                      |
        | function | EXECUTE                                     |
        | table    | SELECT                                      |
        | table    | INSERT                                      |
        | table    | UPDATE                                      |
        | table    | DELETE                                      |
        | table    | TRUNCATE                                    |
        | sequence | USAGE                                       |
        | sequence | SELECT                                      |
        | sequence | UPDATE                                      |
        | type     | USAGE                                       |

    @cap:provision @cap:inspect
    Scenario Outline: default privileges of "synchro_owner" in schema "synchro" keep new <kind> closed to PUBLIC
      When the operator creates a new <kind> in schema "synchro" as "synchro_owner"
      Then PUBLIC has no privilege on the new <kind>

      Examples:
        | kind     |
        | table    |
        | sequence |
        | function |
        | type     |

  Rule: only explicitly required schema, type and function capabilities are granted

    @cap:provision @cap:inspect
    Scenario Outline: role "<role>" <verdict> execute "<function>"
      Then server inspection shows has_function_privilege for role "<role>" on "<function>" is <allowed>
      And a login of role "<role>" <verdict> call "<function>"

      Examples:
        | role             | function                                                  | verdict  | allowed |
        | synchro_adapter  | synchro.synchro_schema_manifest()                         | may      | true    |
        | synchro_adapter  | synchro.synchro_readiness()                               | may      | true    |
        | synchro_monitor  | synchro.synchro_health_detail()                           | may      | true    |
        | synchro_seed     | synchro.synchro_schema_manifest()                         | may      | true    |
        | synchro_seed     | synchro.synchro_readiness()                               | may not  | false   |
        | synchro_adapter  | synchro.synchro_register_shared_scope(text,boolean)       | may not  | false   |
        | synchro_operator | synchro.synchro_tables()                                  | may not  | false   |
        | synchro_monitor  | synchro.synchro_schema_manifest()                         | may not  | false   |
        | synchro_adapter  | synchro.synchro_health_detail()                           | may not  | false   |
        | synchro_seed     | synchro.synchro_retry_wal_poison()                        | may not  | false   |

    @cap:provision @cap:sourceSql
    Scenario: the adapter's HTTP endpoint depends on its explicit grant
      Given a registered table "tasks" with columns:
        | column   | type   | key |
        | id       | string | yes |
        | owner_id | string | no  |
      And table "tasks" places each row in scope "user:{owner_id}"
      And client "A" of user "alice" has connected
      And capture has materialized every committed source transaction
      When the operator revokes EXECUTE on "synchro.synchro_readiness()" from "synchro_adapter"
      Then the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """
      When the operator grants EXECUTE on "synchro.synchro_readiness()" to "synchro_adapter" again
      Then the readiness response is back to 200 with body exactly:
        """
        {"ready":true}
        """

  Rule: public execution and direct adapter, seed or monitor access to metadata tables or sequences are violations

    @negative @cap:provision @cap:inspect
    Scenario Outline: role "<role>" has no direct access to any table or sequence in schema "synchro"
      When the harness checks every table and sequence in schema "synchro" for SELECT, INSERT, UPDATE, DELETE and USAGE held by role "<role>"
      Then no such privilege is held
      And a login of role "<role>" is refused every one of those reads and writes

      Examples:
        | role            |
        | synchro_adapter |
        | synchro_seed    |
        | synchro_monitor |

    @negative @cap:provision @cap:sourceSql
    Scenario Outline: a login with no Synchro role membership is refused <action>
      Given a login role "nobody" with no membership in any Synchro role
      When "nobody" runs:
        """
        <sql>
        """
      Then the statement is refused with SQLSTATE "42501"

      Examples:
        | action                        | sql                                                              |
        | the readiness function        | SELECT synchro.synchro_readiness();                              |
        | the schema manifest function  | SELECT synchro.synchro_schema_manifest();                        |
        | a metadata table              | SELECT count(*) FROM synchro.clients;                            |
        | a Synchro type                | SELECT NULL::synchro.synchro_row_ref;                            |
        | creating an object            | CREATE TABLE synchro.intruder (id text);                         |

    @negative @cap:provision @cap:sourceSql
    Scenario: a login of the seed group cannot read the token key table
      Given a login role "seed_login" that is a member of "synchro_seed" only
      When "seed_login" runs:
        """
        SELECT * FROM synchro.token_keys;
        """
      Then the statement is refused with SQLSTATE "42501"
