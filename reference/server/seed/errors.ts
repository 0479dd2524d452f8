/**
 * How a seed export refuses. A bad argument or token is a request error with
 * the protocol's error body; a transaction without the required
 * characteristics is a different failure (in a SQL implementation it is an
 * SQL error, not a JSON answer), so it has its own class.
 */
export class SeedRequestError extends Error {
  readonly code: string;
  readonly retryable: boolean;

  constructor(message: string, code = 'invalid_request', retryable = false) {
    super(message);
    this.name = 'SeedRequestError';
    this.code = code;
    this.retryable = retryable;
  }

  body(): { error: { code: string; message: string; retryable: boolean } } {
    return { error: { code: this.code, message: this.message, retryable: this.retryable } };
  }
}

export class SeedTransactionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SeedTransactionError';
  }
}

/** One answer for every token problem, so the reply never tells which check failed. */
export const badToken = () => new SeedRequestError('the seed page token is not valid for this export');
