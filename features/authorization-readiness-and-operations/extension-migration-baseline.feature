@SYNC-OPS-007 @server @internal @form:postgresql-extension
Feature: Extension Migration Baseline
  Operators upgrade in place with ALTER EXTENSION ... UPDATE, so every path
  they can take must end in the same database a fresh install produces. Version
  0.3.1, the first published Protocol 3 release, is the oldest version an
  update may start from: it is proven by a clean PostgreSQL 18 install and by
  exercising it as non-superuser roles. Every later version is reached from
  0.3.1 by one chain of update scripts, and the result equals a clean install
  of the current version. Nothing earlier (the unpublished 0.3.0 candidate,
  experimental pre-0.3.0 states) has an update path, and CREATE ... IF NOT
  EXISTS is not a migration. The harness installs versions into fresh
  PostgreSQL 18 databases, walks the update chain, and compares catalogs.

  Rule: version 0.3.1 is the first supported baseline, proven by a clean PostgreSQL 18 install and non-superuser role checks

    @cap:provision @cap:sourceSql @cap:inspect
    Scenario: a clean install of 0.3.1 has the fixed schema, owner and roles and works for non-superuser roles
      Given a clean PostgreSQL 18 database
      And the six group roles and one worker login are provisioned
      When the operator runs:
        """
        CREATE EXTENSION synchro_pg VERSION '0.3.1';
        """
      Then server inspection shows schema "synchro" owned by "synchro_owner"
      And server inspection shows extension "synchro_pg" at version "0.3.1" with "extrelocatable" false
      And a login that is a member of "synchro_monitor" only can run "SELECT synchro.synchro_readiness()"
      And a login that is a member of "synchro_adapter" only can run "SELECT synchro.synchro_readiness()"
      And a login that is a member of "synchro_monitor" only can run "SELECT synchro.synchro_health_detail()"
      And none of those logins is a superuser

  Rule: each later version is reachable from 0.3.1 through one chain of update scripts

    @cap:provision @cap:sourceSql @cap:inspect
    Scenario: the update graph from 0.3.1 to the current version is one chain
      Given a clean PostgreSQL 18 database with the packaged extension files
      When the harness reads pg_extension_update_paths('synchro_pg')
      Then there is a path from "0.3.1" to the current version
      And every version after "0.3.1" has exactly one update script leading into it, from the version just before it
      And the path from "0.3.1" to the current version visits every packaged version in SemVer order

  Rule: a 0.3.1 installation updated through the chain has the same extension objects as a clean install of the current version, and a chain whose result differs is a violation

    @negative @cap:provision @cap:sourceSql @cap:inspect
    Scenario: updating step by step from 0.3.1 ends in the clean-install catalog
      Given a clean PostgreSQL 18 database "upgraded" where the operator ran CREATE EXTENSION synchro_pg VERSION '0.3.1'
      And the operator ran ALTER EXTENSION synchro_pg UPDATE TO each later version in turn in "upgraded"
      And a clean PostgreSQL 18 database "fresh" where the operator ran CREATE EXTENSION synchro_pg at the current version
      When the harness compares "upgraded" with "fresh"
      Then both have the same extension members by pg_describe_object
      And both have the same function signatures, return types, volatility, security and search_path settings
      And both have the same ACLs on the schema and every member object
      And both have the same column definitions, constraints, indexes and triggers on every member table
      And both have the same comments on member objects

  Rule: in-place updates from deleted, experimental or unpublished pre-0.3.1 states are not offered

    @negative @cap:provision @cap:sourceSql
    Scenario Outline: ALTER EXTENSION from <from> has no update path
      Given a clean PostgreSQL 18 database with the packaged extension files
      When the harness reads pg_extension_update_paths('synchro_pg')
      Then there is no path from "<from>" to any version

      Examples:
        | from       |
        | 0.3.0      |
        | 0.2.0      |
        | unpackaged |

  Rule: IF NOT EXISTS is not migration logic

    @negative @cap:inspect
    Scenario: no update script relies on IF NOT EXISTS to create objects
      When the harness reads every update script "synchro_pg--<from>--<to>.sql" in the packaged extension
      Then no statement in them contains "IF NOT EXISTS"
