@SYNC-PROTO-002 @server @client
Feature: Portable Wire Integer Range
  Every integer in a protocol envelope must survive a trip through any JSON
  parser unchanged, including one that stores numbers as IEEE 754 doubles. So
  envelope integers are integer tokens (no fraction, no exponent) inside
  -9007199254740991..9007199254740991, and fields declared positive
  (schema versions, client_generation, current_client_generation,
  compatibility_floor, precision, minimum, maximum) or nonnegative
  (scope_set_version, scale) keep to 1..9007199254740991 or
  0..9007199254740991. Fixed members (protocol_version 3, checksum version 1,
  limit 1..1000) are narrower still. A value outside its range must never be
  emitted, accepted, rounded to a neighbour, wrapped or flipped in sign, and a
  server counter must refuse to allocate past the top of the range. Decimal
  digits inside opaque tokens and int64 row values (JSON strings) are not
  envelope integers and may exceed the range.

  The harness sends requests with out-of-range and non-integer tokens and
  expects a whole-request 400, lets the proxy give a client out-of-range
  response integers and expects the client to refuse them, checks every
  integer recorded on the wire, and pushes a server counter to the top of the
  range through a client-state control.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
      | estimate | int64  | no  |
    And table "tasks" places each row in scope "user:{owner_id}"
    And client "A" of user "alice" has connected and rebuilt every assigned scope

  @cap:provision
  Rule: every envelope integer stays inside the portable range

    Scenario: every integer the server and the client put on the wire is a safe integer token
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | owner_id | title | estimate            |
        | 3e4f5a6b-7c8d-4e9f-a0b1-c2d3e4f5a601 | insert    | tasks | t-1 | alice    | big   | 9223372036854775807 |
      And client "A" pulls
      Then every JSON number the proxy recorded in an envelope member, in either direction, is an integer token without fraction or exponent
      And every such integer lies in -9007199254740991..9007199254740991

    Scenario Outline: a request integer outside the portable range is refused, not rounded or wrapped
      When client "A" sends its next <endpoint> request with "<member>" set to <value>
      Then the response status is 400 with error code "invalid_request"
      And no durable state changed on the server

      Examples:
        | endpoint | member             | value                | why                                        |
        | pull     | /client_generation | 9007199254740992     | one above the portable maximum             |
        | pull     | /client_generation | 9007199254740993     | would round to 9007199254740992 as a double |
        | pull     | /scope_set_version | 18446744073709551616 | would wrap to 0 in 64-bit unsigned         |
        | pull     | /scope_set_version | -9007199254740992    | one below the portable minimum             |
        | push     | /client_generation | 9223372036854775808  | would flip sign in 64-bit signed           |
        | push     | /schema/version    | 9007199254740992     | one above the portable maximum             |
        | rebuild  | /client_generation | 1e3                  | exponent form                              |
        | rebuild  | /limit             | 10.0                 | fraction form                              |
        | connect  | /scope_set_version | 2.5                  | fraction                                   |

  @cap:provision
  Rule: a field declared positive or nonnegative keeps to that narrower range

    @negative
    Scenario Outline: a request value below the declared lower bound is refused
      When client "A" sends its next <endpoint> request with "<member>" set to <value>
      Then the response status is 400 with error code "invalid_request"
      And no durable state changed on the server

      Examples:
        | endpoint | member             | value | declared    |
        | pull     | /client_generation | 0     | positive    |
        | push     | /client_generation | -1    | positive    |
        | pull     | /schema/version    | 0     | positive    |
        | pull     | /scope_set_version | -1    | nonnegative |
        | connect  | /scope_set_version | -1    | nonnegative |
        | connect  | /client_generation | 0     | positive    |

    Scenario Outline: the boundary values of a declared range are accepted as integers
      When client "A" sends its next pull request with "/limit" set to <limit>
      Then the response status is 200

      Examples:
        | limit |
        | 1     |
        | 1000  |

    Scenario: response integers keep to their declared ranges
      When client "A" connects
      Then the response member "/client_generation" is an integer in 1..9007199254740991
      And the response member "/scope_set_version" is an integer in 0..9007199254740991
      And the response member "/protocol_version" equals 3
      And the response member "/schema/version" is an integer in 1..9007199254740991

  @cap:provision @cap:clients
  Rule: server counter allocation fails before it would overflow

    @negative
    Scenario: a client generation at the top of the range is not renewed past it
      Given the server's client_generation of client "A" is set to 9007199254740991
      And the server has expired client "A"
      When client "A" connects
      Then the response status is not 200
      And the response carries no integer above 9007199254740991 and no negative integer
      And the server's client_generation of client "A" is still 9007199254740991

    @negative @cap:scopes
    Scenario: a scope set version at the top of the range is not advanced past it
      Given the server's scope_set_version of client "A" is set to 9007199254740991
      And user "alice" is assigned scope "project:p1"
      When client "A" pulls
      Then the response status is not 200
      And the response carries no integer above 9007199254740991 and no negative integer
      And the server's scope_set_version of client "A" is still 9007199254740991

  Rule: a client refuses an out-of-range integer from the server

    @negative @cap:provision
    Scenario Outline: a response with an out-of-range envelope integer is refused and nothing is installed
      Given the proxy will set "<member>" to <value> in the next <endpoint> response to client "A"
      When the harness kills client "A" and restarts it on the same database
      And client "A" syncs
      Then the sync of client "A" ends with completion "error"
      And no durable state changed on client "A"

      Examples:
        | endpoint | member             | value                |
        | connect  | /client_generation | 9007199254740992     |
        | connect  | /client_generation | 0                    |
        | connect  | /scope_set_version | -1                   |
        | pull     | /scope_set_version | 9007199254740993     |
        | pull     | /scope_set_version | 1.5                  |
        | connect  | /protocol_version  | 3.0                  |

  Rule: decimal strings inside opaque tokens and row values are not envelope integers

    @cap:provision
    Scenario: an int64 row value beyond the safe range travels as a string and is kept exactly
      When client "A" pushes a batch with:
        | mutation_id                          | operation | table | pk  | owner_id | title | estimate             |
        | 4f5a6b7c-8d9e-4fa0-b1c2-d3e4f5a6b701 | insert    | tasks | t-2 | alice    | max   | -9223372036854775808 |
      Then the push outcome of mutation "4f5a6b7c-8d9e-4fa0-b1c2-d3e4f5a6b701" is "applied"
      And the server_row of that outcome has field "estimate" equal to the JSON string "-9223372036854775808"

    @cap:provision
    Scenario: a cursor made of a long run of digits is stored and returned byte for byte
      Given the proxy aliases the cursors issued to client "A" for scope "user:alice" in issue order:
        | alias                                       |
        | "18446744073709551616184467440737095516160" |
      When client "A" syncs
      And client "A" syncs
      Then client "A" presented the cursor "18446744073709551616184467440737095516160" for scope "user:alice" in its last pull request
