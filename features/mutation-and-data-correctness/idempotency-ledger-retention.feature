@SYNC-MUT-011 @server
Feature: Idempotency Ledger Retention
  An offline client can come back after any length of time with a batch whose
  response it never saw. The batch and mutation ledgers are what let the
  server answer it with the stored outcome instead of executing again, so they
  live as long as the client identity does. Age, inactivity, a schema change,
  cursor retention and compaction are not reasons to forget them; only an
  irreversible retirement of the client, recorded durably before any ledger
  row goes, may release them, and a retired client ID never works again. The
  harness completes a batch, drives each of those events through the adapter
  capabilities, and then replays the batch and its mutations.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type    | key | writable | lifecycle |
      | id       | string  | yes | no       |           |
      | owner_id | string  | no  | yes      |           |
      | title    | string  | no  | yes      |           |
      | done     | boolean | no  | yes      |           |
    And table "tasks" places each row in scope "user:{owner_id}"
    And client "W" of user "alice" has connected
    And client "W" has pushed batch "11b00001-0000-4000-8000-000000000001" with:
      | mutation_id                          | operation | table | pk  | base_version | owner_id | title     |
      | 11a00001-0000-4000-8000-000000000001 | insert    | tasks | t-1 |              | alice    | file tax  |
    And the accepted outcome of mutation "11a00001-0000-4000-8000-000000000001" is remembered as "O1"
    And the server_version of mutation "11a00001-0000-4000-8000-000000000001" is remembered as "V1"

  Rule: batch and mutation ledger entries do not expire because of age, inactivity, schema change, cursor retention or compaction

    @cap:provision
    Scenario Outline: the ledger survives <event>
      When <action>
      And client "W" resends batch "11b00001-0000-4000-8000-000000000001" unchanged
      Then the response status is 200
      And the response body is byte-identical to the first response to batch "11b00001-0000-4000-8000-000000000001"
      When client "W" pushes batch "11b00002-0000-4000-8000-000000000002" with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | title     |
        | 11a00001-0000-4000-8000-000000000001 | insert    | tasks | t-1 |              | alice    | file tax  |
      Then the response status is 200
      And the outcome of mutation "11a00001-0000-4000-8000-000000000001" is member for member equal to "O1"

      @cap:clock
      Examples: age
        | event                    | action                                              |
        | four hundred days of age | the operator advances the server clock by 400 days  |

      @cap:clients
      Examples: inactivity
        | event                  | action                                                                                                                    |
        | inactivity and expiry  | the operator expires the client generation of client "W" and client "W" connects again and receives a new client_generation |

      @cap:schema
      Examples: schema change
        | event           | action                                                                                                                                  |
        | a schema change | the operator publishes a new schema version that adds nullable writable column "note" of type string to table "tasks" and client "W" connects again |

      @cap:compaction @cap:clients @cap:inspect
      Examples: retention and compaction
        | event                     | action                                                                                                                    |
        | a retention floor advance | the operator advances the retention floor of scope "user:alice" past every cursor issued so far and client "W" connects again |
        | compaction                | the operator compacts the change history of scope "user:alice"                                                            |

    @negative @cap:provision @cap:inspect @cap:clock @cap:compaction
    Scenario: no ledger row disappears while no retirement marker exists
      Given server inspection counts the batch and mutation ledger rows of client "W"
      When the operator advances the server clock by 400 days
      And the operator compacts the change history of scope "user:alice"
      Then server inspection shows the same batch and mutation ledger rows of client "W"
      And server inspection shows no retirement marker for client "W"

    @negative @cap:provision
    Scenario: a batch identity stays bound to its content for the life of the client
      When client "W" resends batch "11b00001-0000-4000-8000-000000000001" with title "pay tax" instead of "file tax"
      Then the response status is 409 with error code "idempotency_conflict"
      And no durable state changed on the server

  Rule: ledger deletion happens only after the permanent marker of an irreversible client retirement is durable

    @cap:provision @cap:clients
    Scenario Outline: a retired client is refused on every endpoint, replay included
      Given the operator retires client "W" irreversibly
      When client "W" <request>
      Then the response status is 409 with error code "client_retired"
      And the error body has code "client_retired", a nonempty message, "retryable": false and no member "accepted" or "rejected"

      Examples:
        | request                                                                   |
        | resends batch "11b00001-0000-4000-8000-000000000001" unchanged            |
        | pushes batch "11b00001-0000-4000-8000-000000000001" with title "pay tax"  |
        | pushes a new batch inserting row "t-2" of table "tasks"                   |
        | connects                                                                  |
        | pulls                                                                     |
        | requests a rebuild of scope "user:alice"                                  |

    @cap:provision @cap:clients @cap:inspect
    Scenario: the retirement marker is durable before any ledger row is removed
      When the operator retires client "W" irreversibly
      Then server inspection shows a retirement marker for client "W" with a retirement ID and time
      And server inspection shows that client "W" has no batch or mutation ledger row without that marker in place

    @cap:provision @cap:clients
    Scenario: retirement keeps the write fences of deleted rows
      Given client "W" has pushed a batch with:
        | mutation_id                          | operation | table | pk  | base_version |
        | 11a00002-0000-4000-8000-000000000002 | delete    | tasks | t-1 | V1           |
      And client "X" of user "alice" has connected
      When the operator retires client "W" irreversibly
      And client "X" pushes a batch with:
        | mutation_id                          | operation | table | pk  | base_version | owner_id | title    |
        | 11a00003-0000-4000-8000-000000000003 | insert    | tasks | t-1 |              | alice    | revived  |
      Then the rejected outcome of mutation "11a00003-0000-4000-8000-000000000003" has status "conflict" and code "row_deleted"

  Rule: a client ID is never reused outside the retirement path

    @negative @cap:provision @cap:clients
    Scenario: a retired client ID cannot be registered again
      Given the operator retires client "W" irreversibly
      When a new installation of user "alice" connects presenting the client_id of client "W" without a client_generation
      Then the response status is 409 with error code "client_retired"
      When a new installation of user "alice" connects with a fresh client_id
      Then the response status is 200

    @negative @cap:provision @cap:clients
    Scenario: an expired client is not retired and keeps its identity and ledger
      Given the operator expires the client generation of client "W"
      When client "W" connects
      Then the response status is 200
      When client "W" resends batch "11b00001-0000-4000-8000-000000000001" unchanged
      Then the response body is byte-identical to the first response to batch "11b00001-0000-4000-8000-000000000001"
