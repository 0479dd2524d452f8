/**
 * Top-level statements of an SQL script: split at semicolons outside quotes,
 * quoted identifiers, comments and dollar-quoted bodies. A function body or a
 * DO block is one statement and is not looked into, so a PL/pgSQL
 * `IF NOT EXISTS (SELECT …) THEN` in a body is not taken for DDL.
 */
export function topLevelStatements(script: string): string[] {
  const statements: string[] = [];
  let current = '';
  let i = 0;
  const push = () => {
    const text = current.trim();
    if (text !== '') statements.push(text);
    current = '';
  };
  while (i < script.length) {
    const rest = script.slice(i);
    const dollar = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(rest);
    if (dollar) {
      const tag = dollar[0];
      const end = script.indexOf(tag, i + tag.length);
      const stop = end === -1 ? script.length : end + tag.length;
      // The body stands in as its tag pair: only the statement around it is read.
      current += `${tag}${tag}`;
      i = stop;
      continue;
    }
    const ch = script[i] as string;
    if (rest.startsWith('--')) {
      const end = script.indexOf('\n', i);
      i = end === -1 ? script.length : end + 1;
      current += ' ';
      continue;
    }
    if (rest.startsWith('/*')) {
      const end = script.indexOf('*/', i + 2);
      i = end === -1 ? script.length : end + 2;
      current += ' ';
      continue;
    }
    if (ch === "'" || ch === '"') {
      let j = i + 1;
      while (j < script.length) {
        if (script[j] === ch && script[j + 1] === ch) j += 2;
        else if (script[j] === ch) break;
        else j += 1;
      }
      current += script.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (ch === ';') {
      push();
      i += 1;
      continue;
    }
    current += ch;
    i += 1;
  }
  push();
  return statements;
}
