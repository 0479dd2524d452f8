/**
 * Assertions that count themselves.
 *
 * A scenario is reported passed only when it executed at least one assertion,
 * so every check in a step goes through one of these methods: the count is
 * attached to the scenario in an After hook and read back by the report.
 */
import assert from 'node:assert/strict';

export class CountingAssert {
  count = 0;

  equal<T>(actual: unknown, expected: T, message?: string): asserts actual is T {
    this.count += 1;
    assert.deepStrictEqual(actual, expected, message);
  }

  notEqual(actual: unknown, unexpected: unknown, message?: string): void {
    this.count += 1;
    assert.notDeepStrictEqual(actual, unexpected, message);
  }

  ok(value: unknown, message: string): asserts value {
    this.count += 1;
    assert.ok(value, message);
  }

  match(text: string, pattern: RegExp, message?: string): void {
    this.count += 1;
    assert.match(text, pattern, message);
  }
}
