@SYNC-LOCAL-004 @client
Feature: Rejection Inspectability
  A mutation the server rejects is user intent that did not happen. The
  app can only explain that, or let the user act on it, if the rejected
  mutation and the server's reason stay available. Each rejection is kept
  durably with its code, its status and the original authored mutation, across
  restarts and every later sync step, including schema reconciliation. Only an
  explicit policy call by the application may clear it. The harness provokes
  rejections of several kinds, restarts the client, runs more syncs and a
  schema change, and reads the rejections through inspection until the clear
  call removes them.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key | nullable |
      | id       | string | yes | no       |
      | owner_id | string | no  | no       |
      | title    | string | no  | no       |
      | estimate | int    | no  | yes      |
    And table "tasks" places each row in scope "user:{owner_id}"
    And the server holds these "tasks" rows, created by client "W":
      | id | owner_id | title        | estimate | version |
      | t1 | alice    | Plan trip    | 3        | T1      |
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  Rule: Rejected mutations and their canonical reasons remain durably inspectable across restart

    @cap:crash
    Scenario Outline: A "<code>" rejection survives a restart and later syncs
      Given <setup>
      And client "A" executes SQL:
        """
        <statement>
        """
      When client "A" syncs
      Then client "A" inspection shows a rejection of that mutation with status "<status>" and code "<code>"
      When the harness kills client "A"
      And the harness restarts client "A"
      And client "A" syncs
      And client "A" syncs
      Then client "A" inspection shows the same rejection with the same "mutationID", "status", "code", "mutationJSON" and "rejectionJSON"
      And the proxy recorded no later push carrying that "mutationID"

      Examples:
        | setup                                                                           | statement                                                         | status            | code             |
        | client "W" has pushed an update of task "t1" setting "title" to "Plan holiday"  | UPDATE tasks SET title = 'Plan summer trip' WHERE id = 't1';      | conflict          | version_conflict |
        | client "W" has pushed a delete of task "t1"                                     | UPDATE tasks SET estimate = 5 WHERE id = 't1';                    | conflict          | row_deleted      |

      @cap:provision
      Examples: a write policy on the server
        | setup                                                                          | statement                                                                            | status            | code            |
        | the server write policy rejects titles longer than 10 characters for "tasks"  | INSERT INTO tasks (id, owner_id, title) VALUES ('t2', 'alice', 'A very long title'); | rejected_terminal | policy_rejected |

  Rule: Only explicit client policy clears a rejection

    Scenario: The clear call removes the rejections, and nothing else does
      Given client "W" has pushed an update of task "t1" setting "title" to "Plan holiday"
      And client "A" executes SQL:
        """
        UPDATE tasks SET title = 'Plan summer trip' WHERE id = 't1';
        """
      And client "A" has synced
      And client "A" inspection shows 1 rejection
      When client "A" syncs
      And client "A" stops and starts again
      Then client "A" inspection shows 1 rejection
      When the application of client "A" clears rejections through the policy call
      Then client "A" inspection shows no rejection

  Rule: Schema reconciliation never deletes a rejection or the rejected intent

    @negative @cap:schema
    Scenario: A schema-incompatible rejection survives the reset that produced it and a later schema change
      Given client "A" is offline
      And client "A" executes SQL:
        """
        UPDATE tasks SET estimate = 8 WHERE id = 't1';
        """
      And the operator publishes a "class_4" manifest that removes column "estimate" from table "tasks"
      And client "A" is online
      And client "A" has synced and reports state "error" with recovery action "schema_reset"
      When client "A" resets its schema and starts
      And client "A" syncs
      Then the push outcome of that mutation is "rejected_terminal" with code "schema_incompatible" and "incompatible_field_ids" holding the field ID of "estimate"
      And client "A" inspection shows the rejection with code "schema_incompatible" and the mutation with its original "authoredSchema", "baseVersion" "T1", "clientVersion" and authored field "estimate" value 8
      When the operator publishes a "class_2" manifest that adds nullable column "note" of type "string" to table "tasks"
      And client "A" syncs
      And the harness restarts client "A"
      Then client "A" inspection still shows that rejection with code "schema_incompatible" and the unchanged mutation
      And the proxy recorded exactly one push answered with an outcome for that "mutationID", and no push carrying it after that one

    @negative @cap:schema
    Scenario: A conflict rejection survives a rebuild of its scope
      Given client "W" has pushed an update of task "t1" setting "title" to "Plan holiday"
      And client "A" executes SQL:
        """
        UPDATE tasks SET title = 'Plan summer trip' WHERE id = 't1';
        """
      And client "A" has synced
      When the server publishes a class 3 manifest that adds a column "priority" of type "int" with existing values to table "tasks", affecting scope "user:alice"
      And client "A" syncs
      Then client "A" rebuilt scope "user:alice"
      And client "A" inspection shows the rejection with code "version_conflict" unchanged
