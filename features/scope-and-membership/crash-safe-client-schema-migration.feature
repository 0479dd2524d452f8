@SYNC-SCOPE-007 @client
Feature: Crash Safe Client Schema Migration
  A client applying a new schema changes its own SQLite tables while holding
  queued writes and local-only data the user cannot get back from the server.
  A crash in the middle must not lose them, re-run DDL that already committed,
  leave the tables half in one schema and half in the other, or require the
  network to finish. So before any DDL the client stores a journal: the full
  verified target manifest and a versioned, deterministic, typed plan bound to
  the source and target references, the action, the affected scopes and the
  phase. Restart continues from that journal, and any inconsistency becomes an
  explicit error that keeps the queue and local data. The harness crashes the
  client at the migration points, restarts it with the network cut, tampers
  with journal inputs, and reads the journal, queue, local rows, status and
  proxy log.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And client "A" of user "alice" has connected and rebuilt every assigned scope
    And client "A" has a local-only table "drafts" holding rows "d-1, d-2"
    And client "A" has 3 queued mutations on table "tasks" that are not yet sent
    And the harness records the queued mutations and local-only rows client "A" inspects as "kept"
    And the operator publishes a "class_3" manifest that adds column "priority" of type "int" with historical values to table "tasks", affecting scope "user:alice"

  Rule: before any local DDL the client persists the complete verified target manifest and a versioned deterministic typed plan bound to references, action, affected scopes and phase

    @cap:crash @cap:inspect
    Scenario: at the prepared point the journal is complete and the tables are still in the source schema
      Given client "A" arms crash point "migration_prepared"
      When client "A" syncs
      Then client "A" terminates at crash point "migration_prepared"
      When client "A" is restarted with the proxy refusing every request
      And client "A" is paused before recovery
      Then the migration journal client "A" inspects holds:
        | member            | value                                                    |
        | source reference  | the "before" manifest version and hash                   |
        | target reference  | the new manifest version and hash                        |
        | target manifest   | the complete body whose recomputed schema_hash matches   |
        | action            | rebuild_local                                            |
        | affected scopes   | user:alice                                               |
        | plan format       | a named, versioned plan format                           |
        | plan              | typed steps only, hash-bound to both manifests           |
        | phase             | the prepared phase                                       |
      And the physical columns of synced table "tasks" on client "A" match the source manifest

    @cap:crash @cap:inspect
    Scenario: the same manifest pair always yields the same plan
      Given a second client "C" of user "alice" in the same source state as client "A"
      When client "A" and client "C" each prepare the migration to the new manifest and stop at crash point "migration_prepared"
      Then the plans in the two journals are byte-identical

  Rule: restart resumes from the journal without a schema fetch and never repeats committed DDL

    @cap:crash @cap:inspect
    Scenario Outline: a crash at "<point>" resumes with the network cut and finishes the DDL exactly once
      Given client "A" arms crash point "<point>"
      When client "A" syncs
      Then client "A" terminates at crash point "<point>"
      When client "A" is restarted with the proxy refusing every request
      And client "A" recovers its migration
      Then the proxy recorded 0 requests from client "A" before the journal reached the applied phase
      And the physical columns of synced table "tasks" on client "A" match the target manifest
      And the event log of client "A" shows the migration DDL committed exactly once
      And client "A" reports no error
      When the proxy forwards requests again
      And client "A" syncs
      Then client "A" pushes its queued mutations before it rebuilds scope "user:alice"
      And the migration journal client "A" inspects reaches the completed phase

      Examples:
        | point                 |
        | migration_prepared    |
        | migration_ddl_applied |

  Rule: restart preserves queues and local-only data

    @cap:crash @cap:inspect
    Scenario Outline: after a crash at "<point>" and recovery, the queue and local-only rows are unchanged
      Given client "A" arms crash point "<point>"
      When client "A" syncs
      And client "A" is restarted with the proxy refusing every request
      And client "A" recovers its migration
      Then the queued mutations and local-only rows client "A" inspects equal "kept" byte for byte

      Examples:
        | point                 |
        | migration_prepared    |
        | migration_ddl_applied |

  Rule: inconsistent physical, reference, body, plan or phase state enters an explicit error

    @negative @cap:crash @cap:inspect
    Scenario Outline: a journal with <defect> ends in an explicit error with nothing lost
      Given client "A" arms crash point "migration_prepared"
      And client "A" syncs
      And client "A" terminates at crash point "migration_prepared"
      When the harness <tamper> while client "A" is down
      And client "A" is restarted with the proxy refusing every request
      And client "A" recovers its migration
      Then client "A" reports state "error" with a non-retryable failure of operation "schema"
      And the physical columns of synced table "tasks" on client "A" are those found before the restart
      And the queued mutations and local-only rows client "A" inspects equal "kept" byte for byte
      And the migration journal client "A" inspects does not claim the completed phase

      Examples:
        | defect                                      | tamper                                                                          |
        | a target body that no longer matches its hash | changes one byte of the stored target manifest body                          |
        | a plan whose hash does not match             | changes one step of the stored plan                                             |
        | a source reference that is not installed     | changes the stored source reference to version 99                               |
        | an unknown phase                             | sets the stored phase to an unknown value                                       |
        | a missing target manifest                    | removes the stored target manifest                                              |
        | a raw SQL plan step                          | appends a plan step holding raw SQL text "DROP TABLE drafts"                    |
        | a synced table matching neither schema       | adds column "rogue" of type TEXT to the synced table "tasks" in the SQLite file |

  Rule: missing journal inputs, raw unvalidated SQL, network-dependent recovery, mixed physical and active schema, or false completion is a violation

    @negative @cap:crash @cap:inspect
    Scenario: the client never reports the target schema as active while its tables are in the source schema
      Given client "A" arms crash point "migration_prepared"
      When client "A" syncs
      And client "A" is restarted with the proxy refusing every request
      And client "A" is paused before recovery
      Then the active schema client "A" inspects is the "before" manifest reference
      And the physical columns of synced table "tasks" on client "A" match the source manifest

    @negative @cap:crash @cap:inspect
    Scenario: a pending rebuild after the DDL is not reported as a finished migration
      Given client "A" arms crash point "migration_ddl_applied"
      When client "A" syncs
      And client "A" is restarted with the proxy refusing every request
      And client "A" recovers its migration
      Then the migration journal client "A" inspects does not claim the completed phase
      And scope "user:alice" on client "A" is marked rebuild-required with a null cursor
