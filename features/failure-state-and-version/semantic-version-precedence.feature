@SYNC-STATE-005 @server @client
Feature: Semantic Version Precedence
  Deciding that an app build is too old to sync is a gate on user data, so it
  must be computed the same way everywhere. Application versions and the
  minimum client version are Semantic Versioning 2.0.0 strings, parsed by its
  grammar (MAJOR.MINOR.PATCH, optional -prerelease and +build, no leading
  zeros in numeric parts, ASCII only, no leading v, no whitespace) and ordered
  by its precedence rules: core numbers compared as unbounded integers, a
  prerelease below its release, prerelease identifiers compared left to right
  (numeric ones numerically, numeric below alphanumeric, alphanumeric by ASCII
  order, a shorter list below a longer one that it prefixes), build metadata
  ignored. A malformed version fails closed. The protocol itself is negotiated
  separately by the JSON integer protocol_version, which must be 3 and is
  never derived from any SemVer string.

  The server is provisioned with a minimum client version and answered with
  connect requests whose app_version sits just below, at and just above it;
  versions below the minimum get 426 upgrade_required with the runtime pair
  minimum_client_version and received_client_version, versions at or above it
  get 200. Without a minimum, a malformed app_version is a 400
  invalid_request. A client under test must refuse to announce a malformed
  app version and must always send protocol_version 3.

  Background:
    Given a registered table "tasks" with columns:
      | column   | type   | key |
      | id       | string | yes |
      | owner_id | string | no  |
      | title    | string | no  |
    And table "tasks" places each row in scope "user:{owner_id}"

  @cap:provision
  Rule: application and minimum-client versions parse by Semantic Versioning 2.0.0 exactly

    Scenario Outline: a well-formed app version is accepted on connect
      When the harness sends a raw connect request as user "alice":
        """
        {"client_id":"semver-<case>","platform":"test","app_version":"<version>","protocol_version":3,"schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}
        """
      Then the response status is 200

      Examples:
        | case | version                  |
        | 01   | 0.0.0                    |
        | 02   | 1.2.3                    |
        | 03   | 1.2.3-0a                 |
        | 04   | 1.2.3+001                |
        | 05   | 1.2.3-alpha-1            |
        | 06   | 1.2.3-0                  |
        | 07   | 1.2.3--                  |
        | 08   | 1.0.0-alpha.beta+exp.sha.5114f85 |
        | 09   | 18446744073709551616.0.0 |

    @negative
    Scenario Outline: a malformed app version is refused when no minimum is configured
      When the harness sends a raw connect request as user "alice":
        """
        {"client_id":"semver-bad","platform":"test","app_version":<version>,"protocol_version":3,"schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}
        """
      Then the response status is 400 with error code "invalid_request"
      And the response has no member "/client_generation"

      Examples:
        | version        | defect                                 |
        | "v1.2.3"       | leading v                              |
        | "V1.2.3"       | leading V                              |
        | "1.2"          | missing patch                          |
        | "1.2.3.4"      | fourth component                       |
        | "01.2.3"       | leading zero in major                  |
        | "1.02.3"       | leading zero in minor                  |
        | "1.2.3-01"     | leading zero in a numeric prerelease   |
        | "1.2.3-"       | empty prerelease                       |
        | "1.2.3+"       | empty build                            |
        | "1.2.3-a..b"   | empty prerelease identifier            |
        | " 1.2.3"       | leading space                          |
        | "1.2.3 "       | trailing space                         |
        | "-1.2.3"       | sign                                   |
        | "+1.2.3"       | sign                                   |
        | "1.2.3-\u00e9" | non-ASCII identifier                   |
        | ""             | empty                                  |
        | 123            | not a string                           |

    @negative
    Scenario Outline: a malformed minimum client version is refused by the server configuration
      When the server is provisioned with minimum client version "<minimum>"
      Then the provisioning fails, or every connect is answered 426 with error code "upgrade_required"

      Examples:
        | minimum |
        | v1.0.0  |
        | 1.0     |
        | 1.0.0-  |

  @cap:provision
  Rule: application and minimum-client versions compare by Semantic Versioning 2.0.0 precedence exactly

    Scenario Outline: the minimum client version gate follows SemVer precedence
      Given the server is provisioned with minimum client version "<minimum>"
      When the harness sends a raw connect request as user "alice":
        """
        {"client_id":"gate-<case>","platform":"test","app_version":"<received>","protocol_version":3,"schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}
        """
      Then the connect is <verdict>

      Examples: prerelease and release
        | case | minimum       | received          | verdict  |
        | 01   | 1.0.0         | 1.0.0             | accepted |
        | 02   | 1.0.0         | 1.0.0-rc.1        | refused  |
        | 03   | 1.0.0         | 1.0.0-0           | refused  |
        | 04   | 1.0.0         | 0.9.9             | refused  |
        | 05   | 1.0.0         | 1.0.1-alpha       | accepted |
        | 06   | 1.2.3         | 1.2.3-beta        | refused  |
        | 07   | 1.0.0-rc.1    | 1.0.0             | accepted |

      Examples: prerelease identifiers
        | case | minimum          | received         | verdict  |
        | 11   | 1.0.0-beta.2     | 1.0.0-beta.11    | accepted |
        | 12   | 1.0.0-beta.11    | 1.0.0-beta.2     | refused  |
        | 13   | 1.0.0-alpha.1    | 1.0.0-alpha      | refused  |
        | 14   | 1.0.0-alpha      | 1.0.0-alpha.1    | accepted |
        | 15   | 1.0.0-alpha.beta | 1.0.0-alpha.1    | refused  |
        | 16   | 1.2.3-9          | 1.2.3-10         | accepted |
        | 17   | 1.2.3-alpha      | 1.2.3-1          | refused  |
        | 18   | 1.2.3-a          | 1.2.3-B          | refused  |
        | 19   | 1.2.3-B          | 1.2.3-a          | accepted |
        | 20   | 1.0.0-beta       | 1.0.0-alpha.beta | refused  |

      Examples: build metadata and large numbers
        | case | minimum                  | received                 | verdict  |
        | 21   | 1.2.3+two                | 1.2.3+one                | accepted |
        | 22   | 1.2.3                    | 1.2.3+999                | accepted |
        | 23   | 1.2.3-rc.1+build.9       | 1.2.3-rc.1               | accepted |
        | 24   | 18446744073709551615.0.0 | 18446744073709551616.0.0 | accepted |
        | 25   | 18446744073709551616.0.0 | 18446744073709551615.0.0 | refused  |
        | 26   | 1.10.0                   | 1.9.0                    | refused  |

    Scenario: a refused connect names the runtime pair and nothing else
      Given the server is provisioned with minimum client version "2.0.0"
      When the harness sends a raw connect request as user "alice":
        """
        {"client_id":"gate-pair","platform":"test","app_version":"2.0.0-rc.1","protocol_version":3,"schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}
        """
      Then the response status is 426 with error code "upgrade_required"
      And the error member "minimum_client_version" equals "2.0.0"
      And the error member "received_client_version" equals "2.0.0-rc.1"
      And the error body has neither "required_protocol_version" nor "received_protocol_version"

    @property
    Scenario: for many generated version pairs the gate agrees with the SemVer 2.0.0 order
      Given the server is provisioned with minimum client version "3.1.4-rc.2"
      When the harness connects 200 fresh clients whose app versions are generated well-formed SemVer strings, with cores near 3.1.4, prerelease lists of up to 3 identifiers mixing numbers and ASCII words, and optional build metadata
      Then each connect was accepted exactly when the harness's SemVer 2.0.0 comparison ranks its app version at or above "3.1.4-rc.2"

  @cap:provision
  Rule: protocol negotiation stays the separate integer 3

    Scenario Outline: the protocol is accepted or refused by the integer alone
      When the harness sends a raw connect request as user "alice":
        """
        {"client_id":"proto-<case>","platform":"test","app_version":"<app_version>","protocol_version":<protocol_version>,"schema":{"version":0,"hash":""},"scope_set_version":0,"known_scopes":{}}
        """
      Then the response status is <status>
      And when the status is 426 the error member "required_protocol_version" equals 3 and "received_protocol_version" equals <protocol_version>

      Examples:
        | case | app_version | protocol_version | status |
        | 01   | 3.0.0       | 3                | 200    |
        | 02   | 2.9.9       | 3                | 200    |
        | 03   | 4.0.0-rc.1  | 3                | 200    |
        | 04   | 3.0.0       | 2                | 426    |
        | 05   | 3.0.0       | 4                | 426    |

    Scenario: every connect response announces protocol_version as the integer 3
      When client "A" of user "alice" connects as a fresh client
      Then the raw JSON token of "/protocol_version" in the response is exactly 3

  Rule: a client announces only a well-formed app version and always the integer protocol 3

    @negative @cap:provision
    Scenario Outline: a client configured with a malformed app version refuses to connect
      Given client "A" of user "alice" is opened with app version <version>
      When client "A" syncs
      Then client "A" sent no connect request
      And client "A" has stopped in state "error" with a failure that is not retryable

      Examples:
        | version   |
        | "v2.4.0"  |
        | "2.4"     |
        | "02.4.0"  |
        | "2.4.0 "  |

    @cap:provision
    Scenario Outline: a client sends its app version verbatim and protocol_version 3
      Given client "A" of user "alice" is opened with app version "<version>"
      When client "A" syncs
      Then the connect request of client "A" has "/app_version" equal to "<version>"
      And the raw JSON token of "/protocol_version" in that request is exactly 3

      Examples:
        | version          |
        | 2.4.0            |
        | 4.0.0-rc.1+b.7   |
        | 1.0.0-alpha.beta |
