/**
 * Typed client failures. Every failure names the operation it interrupted,
 * a stable code, whether retrying the same work can succeed, and which
 * explicit recovery call the application should make.
 */
export type Operation = 'opening' | 'connecting' | 'schema' | 'pushing' | 'pulling' | 'rebuilding' | 'lifecycle' | 'database';
export type RecoveryAction = 'retry' | 'schema_reset' | 'none';

export class ClientError extends Error {
  readonly operation: Operation;
  readonly code: string;
  readonly retryable: boolean;
  readonly recoveryAction: RecoveryAction;
  readonly metadata: Record<string, unknown>;

  constructor(operation: Operation, code: string, message: string, retryable = false, recoveryAction: RecoveryAction = 'retry', metadata: Record<string, unknown> = {}) {
    super(message);
    this.name = 'ClientError';
    this.operation = operation;
    this.code = code;
    this.retryable = retryable;
    this.recoveryAction = recoveryAction;
    this.metadata = metadata;
  }
}

/** The four reasons an atomic write group can fail at commit. */
export type AtomicGroupReason = 'deleteFollowedByWrite' | 'tooManyMutations' | 'mutationTooLarge' | 'requestTooLarge';

export class AtomicGroupInvalid extends Error {
  readonly reason: AtomicGroupReason;
  constructor(reason: AtomicGroupReason, message: string) {
    super(message);
    this.name = 'AtomicGroupInvalid';
    this.reason = reason;
  }
}

/** A refused application statement (wrong kind, metadata target, missing manifest...). */
export class SqlRefused extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'SqlRefused';
    this.code = code;
  }
}
