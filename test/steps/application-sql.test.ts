import assert from 'node:assert/strict';
import { test } from 'node:test';
import { expandPlaceholders, splitStatements } from '../../steps/support/mutations/writes.ts';

test('a script splits at line-ending semicolons and at lines that start a statement', () => {
  assert.deepEqual(splitStatements("INSERT INTO t (id) VALUES ('a');\nUPDATE t SET x = 1 WHERE id = 'a';\n"), ["INSERT INTO t (id) VALUES ('a')", "UPDATE t SET x = 1 WHERE id = 'a'"]);
  assert.deepEqual(splitStatements("INSERT INTO t (id) VALUES ('a')\nUPDATE t SET x = 1\n  WHERE id = 'a'\ndelete from t where id = 'a'"), ["INSERT INTO t (id) VALUES ('a')", "UPDATE t SET x = 1\n  WHERE id = 'a'", "delete from t where id = 'a'"]);
  assert.deepEqual(splitStatements("UPDATE t SET body = 'x;y' WHERE id = 'a'"), ["UPDATE t SET body = 'x;y' WHERE id = 'a'"]);
  assert.deepEqual(splitStatements('\n  \n'), []);
});

test('a long-string placeholder becomes a quoted SQL string of that length', () => {
  const sql = expandPlaceholders("INSERT INTO t (id, body) VALUES ('a', <a string of 5 'x' characters>)");
  assert.equal(sql, "INSERT INTO t (id, body) VALUES ('a', 'xxxxx')");
  assert.equal(expandPlaceholders('SELECT 1'), 'SELECT 1');
});
