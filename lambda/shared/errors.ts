// Exceptions are for bad configuration, malformed input and infrastructure failures that
// retrying will not fix; recoverable outcomes of a drain are values (termination/state.ts).

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid configuration: ${problems.join('; ')}`);
    this.name = 'ConfigError';
  }
}

/** The cluster refused us (RBAC 403, 401): the setup is wrong and retrying will not help. */
export class AccessDeniedError extends Error {
  constructor(
    message: string,
    readonly statusCode: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'AccessDeniedError';
  }
}

/** A Kubernetes or AWS call failed in a way worth retrying (5xx, throttling, network). */
export class TransientError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TransientError';
  }
}

/**
 * An AWS service answered, but throttled us or failed (5xx) through every retry: it is there,
 * only busy. Unlike an unreachable endpoint, anyone who can spend the account's request rate
 * can cause this, so nothing may be believed on the strength of it.
 */
export class ServiceBusyError extends TransientError {
  /** The service's error code of the last answer, when there was one (Throttling, InternalFailure, ...). */
  readonly code: string | undefined;
  constructor(message: string, options?: { cause?: unknown; code?: string }) {
    super(message, options);
    this.name = 'ServiceBusyError';
    this.code = options?.code;
  }
}
