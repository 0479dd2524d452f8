/**
 * Turning the text of a feature (table cells, expected values) into wire
 * values, and the scenario's named values (V, W) into numbers.
 */
import type { ColumnSpec } from './model.ts';

/** A feature cell as the portable wire value of a column: `null` is SQL null, `int` a JSON number, the rest text. */
export function cellValue(column: ColumnSpec | undefined, text: string): unknown {
  if (text === 'null') return null;
  switch (column?.type) {
    case 'int':
    case 'float':
      return /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(text) ? Number(text) : text;
    case 'bool':
    case 'boolean':
      return text === 'true' ? true : text === 'false' ? false : text;
    default:
      return text;
  }
}

/** `V`, `V + 2`, `W - 1` with names noted earlier in the scenario; undefined when `text` is not such an expression. */
export function namedNumber(text: string, names: ReadonlyMap<string, number>): number | undefined {
  const match = /^([A-Z])(?:\s*([+-])\s*(\d+))?$/.exec(text.trim());
  if (!match) return undefined;
  const base = names.get(match[1] as string);
  if (base === undefined) throw new Error(`no value was noted as ${match[1]} earlier in this scenario`);
  const offset = match[3] === undefined ? 0 : Number(match[3]) * (match[2] === '-' ? -1 : 1);
  return base + offset;
}

/** An expected value: a named number expression or JSON text. */
export function expectedValue(text: string, names: ReadonlyMap<string, number>): unknown {
  const named = namedNumber(text, names);
  if (named !== undefined) return named;
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`expected value ${text} is neither JSON nor a noted name such as V or V + 1`);
  }
}
