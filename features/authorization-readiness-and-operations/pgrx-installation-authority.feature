@SYNC-OPS-006 @server @internal @form:pgrx-extension
Feature: Pgrx Installation Authority
  The extension's DDL, grants, revokes, comments and membership come from one
  authored source: pgrx annotations and extension_sql! declarations in the Rust
  extension source. The only other authored SQL allowed is the reviewed update
  scripts synchro_pg--<from>--<to>.sql in extensions/synchro-pg/sql. A second,
  hand-maintained copy of the install SQL drifts from the code that is tested,
  so a shipped install script must be exactly what regeneration from the source
  produces. The harness reads the implementation's source tree and packaged
  extension through the inspection capability, regenerates the install script,
  and compares bytes and installed objects. An implementation without a pgrx
  extension lacks the capability and gets these scenarios reported
  not-applicable.

  Background:
    Given server inspection provides the extension source tree, the packaged extension files and the command that regenerates the install script

  Rule: pgrx annotations and extension_sql! declarations are the sole authored source for extension DDL, grants, revokes, comments and membership

    @cap:inspect
    Scenario: every SQL file in the source tree is a generated install script or a reviewed update script
      When the harness lists every file ending in ".sql" in the extension source tree and the packaged extension
      Then each file is either an install script "synchro_pg--<version>.sql" or an update script "extensions/synchro-pg/sql/synchro_pg--<from>--<to>.sql"
      And every update script name has a "<from>" and a "<to>" that are both SemVer versions of the extension

    @cap:provision @cap:inspect
    Scenario: the objects of a clean install are exactly those the generated script declares
      Given a clean PostgreSQL 18 database
      When the operator installs the packaged extension "synchro_pg" at its current version
      Then the extension members listed by pg_depend equal the objects created by the regenerated install script
      And the grants, revokes and comments in the database equal those the regenerated install script issues

  Rule: shipping hand-maintained parallel SQL or generated SQL that does not regenerate byte for byte is a violation

    @negative @cap:inspect
    Scenario: the shipped install script regenerates byte for byte
      When the harness regenerates the install script from the extension source
      Then the regenerated script equals the shipped "synchro_pg--<current version>.sql" byte for byte

    @negative @cap:inspect
    Scenario Outline: <extra> is rejected as parallel SQL
      When the harness finds <extra> in the extension source tree or packaged extension
      Then the installation authority check fails and names that file

      Examples:
        | extra                                                                        |
        | a file "extensions/synchro-pg/sql/grants.sql" that is not an update script   |
        | a second install script "synchro_pg--<current version>.sql" outside the package output |
        | an update script outside "extensions/synchro-pg/sql"                         |
