import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { InputError } from '../../harness/errors.ts';
import { readMessages } from '../../harness/report/messages.ts';
import { fixtureRun, tempDir } from './helpers.ts';

function inputError(run: () => unknown, line: number | undefined, problem: RegExp): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof InputError, `expected an InputError, got ${String(error)}`);
    assert.equal(error.line, line);
    assert.match(error.problem, problem);
    assert.match(error.fix, /--format message/);
    return true;
  });
}

describe('reading a message stream', () => {
  test('indexes documents, pickles, test cases, attempts, results, attachments and hooks', async () => {
    const { index } = await fixtureRun();
    assert.equal(index.meta?.implementation.name, 'cucumber-js');
    assert.equal(index.documents.size, 12);
    assert.equal(index.pickles.length, 16);
    assert.equal(index.testCases.size, 16);
    assert.equal(index.hooks.size, 4);
    const retried = [...index.attempts.values()].find((attempts) => attempts.length === 2);
    assert.deepEqual(
      retried?.map((a) => a.attempt),
      [0, 1],
    );
    for (const started of index.attempts.values()) {
      for (const attempt of started) {
        assert.ok(index.finished.has(attempt.id));
        assert.ok(index.stepResults.get(attempt.id)?.size);
        assert.ok(index.attachments.get(attempt.id)?.length, 'the After hook attached the assertion count');
      }
    }
    assert.ok(index.testRunStarted && index.testRunFinished);
  });

  test('a line that is not JSON is refused with its line number', async () => {
    const { messagesFile } = await fixtureRun();
    const lines = readFileSync(messagesFile, 'utf8').split('\n');
    lines.splice(4, 0, '{"pickle": {');
    const file = join(tempDir(), 'broken.ndjson');
    writeFileSync(file, lines.join('\n'));
    inputError(() => readMessages(file), 5, /not valid JSON/);
  });

  test('a JSON line that is not a Cucumber envelope is refused with its line number', () => {
    const file = join(tempDir(), 'other.ndjson');
    writeFileSync(file, '{"meta":{"protocolVersion":"1","implementation":{"name":"x"},"runtime":{"name":"n"},"os":{"name":"o"},"cpu":{"name":"c"}}}\n\n{"testCase":{"id":"1"}}\n');
    inputError(() => readMessages(file), 3, /not a Cucumber message envelope at \/testCase/);
  });

  test('an empty or missing file is refused', () => {
    const file = join(tempDir(), 'empty.ndjson');
    writeFileSync(file, '\n');
    inputError(() => readMessages(file), undefined, /holds no Cucumber messages/);
    inputError(() => readMessages(join(tempDir(), 'absent.ndjson')), undefined, /cannot read/);
  });
});
