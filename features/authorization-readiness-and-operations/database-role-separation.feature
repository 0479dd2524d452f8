@SYNC-OPS-002 @server @internal
Feature: Database Role Separation
  Six group roles split the SQL authority of the extension: owner, adapter,
  seed, monitor, operator and worker. None can log in or replicate. One
  dedicated worker login, with LOGIN REPLICATION NOINHERIT, belongs to the
  worker group only and must SET ROLE to use its privileges; the in-database
  background worker connects without HBA, and every external connection under
  that identity goes through restricted HBA rules with credentials the
  deployment manages. Inheriting the owner, broad grants or a second
  replication login would let a compromised runtime component reach what it
  should not. The harness reads role attributes and memberships through server
  inspection, connects as a login of each role to try what it must be refused,
  and tries connections that must fail.

  Rule: authority stays split among six NOLOGIN, NOREPLICATION group roles

    @cap:provision @cap:inspect
    Scenario Outline: group role "<role>" has only group attributes
      Then server inspection shows role "<role>" with rolcanlogin, rolreplication, rolsuper, rolcreatedb, rolcreaterole and rolbypassrls all false

      Examples:
        | role             |
        | synchro_owner    |
        | synchro_adapter  |
        | synchro_seed     |
        | synchro_monitor  |
        | synchro_operator |
        | synchro_worker   |

    @cap:provision @cap:inspect
    Scenario: no runtime group or login inherits the owner or another runtime group
      Then server inspection shows no runtime group and no login that belongs to a runtime group among the members of "synchro_owner"
      And server inspection shows every runtime login is a member of exactly one of "synchro_adapter, synchro_seed, synchro_monitor, synchro_operator, synchro_worker"
      And server inspection shows no runtime group is a member of another Synchro group

    @cap:provision @cap:inspect
    Scenario Outline: group "<role>" cannot execute the out-of-role function "<function>"
      Then server inspection shows has_function_privilege for role "<role>" on "<function>" is false
      And a login of role "<role>" may not call "<function>"

      Examples:
        | role             | function                                                   |
        | synchro_operator | synchro.synchro_tables()                                   |
        | synchro_operator | synchro.synchro_readiness()                                |
        | synchro_adapter  | synchro.synchro_compact_scope(text)                        |
        | synchro_adapter  | synchro.synchro_retry_wal_poison()                         |
        | synchro_seed     | synchro.synchro_tables()                                   |
        | synchro_monitor  | synchro.synchro_register_assignment_function(text,integer) |
        | synchro_worker   | synchro.synchro_readiness()                                |

    @cap:provision @cap:inspect
    Scenario: no runtime group holds EXECUTE on every function of the schema
      Then server inspection shows, for each of "synchro_adapter, synchro_seed, synchro_monitor, synchro_operator, synchro_worker", that it can execute fewer functions in schema "synchro" than the schema holds

  Rule: exactly one dedicated LOGIN REPLICATION NOINHERIT worker principal belongs only to the worker group and uses explicit SET ROLE

    @cap:provision @cap:inspect
    Scenario: the configured worker login has the required attributes and one membership
      Then server inspection shows the configured worker login with rolcanlogin true, rolreplication true and rolinherit false
      And server inspection shows the worker login with superuser, createdb, createrole and bypassrls all false
      And server inspection shows exactly one membership of the worker login, in "synchro_worker"
      And server inspection shows no other non-superuser login with rolreplication true

    @cap:provision @cap:sourceSql
    Scenario: the worker login reaches worker tables only after SET ROLE
      When the worker login runs, without SET ROLE:
        """
        SELECT count(*) FROM synchro.sync_wal_progress;
        """
      Then the statement is refused with SQLSTATE "42501"
      When the worker login runs:
        """
        SET ROLE synchro_worker;
        SELECT count(*) FROM synchro.sync_wal_progress;
        """
      Then the statement run as the worker login succeeds

  Rule: external worker connections use restricted HBA and deployment-managed credentials

    @negative @cap:provision @cap:sourceSql
    Scenario Outline: an external worker-identity connection with <problem> is refused
      When the harness opens a <kind> connection as the worker login <how>
      Then the connection is refused by authentication

      Examples:
        | problem                      | kind        | how                                                         |
        | a wrong secret               | SQL         | with a wrong password to the configured database            |
        | another database             | SQL         | with the managed password to database "postgres"            |
        | no password over local socket | SQL        | without a password over the local socket                    |
        | a wrong secret               | replication | with a wrong password to the configured database            |

    @cap:provision @cap:sourceSql
    Scenario: the managed credential opens a SQL and a replication connection to the configured database
      When the harness opens a SQL connection as the worker login with the managed password to the configured database
      Then the connection succeeds
      When the harness opens a replication connection as the worker login with the managed password to the configured database
      Then the connection succeeds

  Rule: a runtime role inheriting the owner or another runtime role, broad function grants, or any other replication-capable login is a violation

    @negative @cap:provision @cap:sourceSql @cap:inspect
    Scenario: a second replication login makes the server unready
      When the operator creates a login "extra_repl" with LOGIN REPLICATION
      Then server inspection reports the capture check "worker" as "failed"
      And the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """
      When the operator drops login "extra_repl"
      Then the readiness response is back to 200 with body exactly:
        """
        {"ready":true}
        """

    @negative @cap:provision @cap:sourceSql @cap:inspect
    Scenario Outline: a worker login that <defect> makes the server unready
      When the operator changes the worker login so that it <defect>
      Then server inspection reports the capture check "worker" as "failed"
      And the readiness response is 503 with body exactly:
        """
        {"ready":false}
        """

      Examples:
        | defect                                 |
        | inherits privileges                    |
        | is also a member of "synchro_adapter"  |
        | is also a member of "synchro_owner"    |
        | loses its REPLICATION attribute        |
