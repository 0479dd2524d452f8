/**
 * The server's own log output, kept for the control protocol's `logs.mark`
 * and `logs.since`: every line is forwarded where it always went (stderr)
 * and also held here, numbered from the server's start. A mark is the number
 * of the next line, so "since a mark" is exact even after older lines were
 * dropped to bound memory (the answer then says how many were dropped).
 */
const DEFAULT_LIMIT = 5_000;

export class LogBuffer {
  readonly #forward: (line: string) => void;
  readonly #limit: number;
  #lines: string[] = [];
  /** Number of the first line still held. */
  #first = 0;

  constructor(forward: (line: string) => void, limit = DEFAULT_LIMIT) {
    this.#forward = forward;
    this.#limit = limit;
  }

  /** Logs one line (a bound function: pass it wherever a `log` callback goes). */
  readonly write = (line: string): void => {
    this.#forward(line);
    this.#lines.push(line);
    if (this.#lines.length > this.#limit) {
      const drop = this.#lines.length - this.#limit;
      this.#lines = this.#lines.slice(drop);
      this.#first += drop;
    }
  };

  /** The number of the next line to be written. */
  mark(): number {
    return this.#first + this.#lines.length;
  }

  /** Every line written from `mark` on, and the mark to ask from next time. */
  since(mark: number): { mark: number; text: string; dropped: number } {
    const from = Math.max(0, mark - this.#first);
    const dropped = Math.max(0, this.#first - mark);
    return { mark: this.mark(), text: this.#lines.slice(from).map((line) => `${line}\n`).join(''), dropped };
  }
}
