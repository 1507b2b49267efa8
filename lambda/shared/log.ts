// What the use cases log through; Powertools Logger satisfies it. An Error, passed alone or
// as a value among the keys (`{ node, error }`), is serialised by the logger with its name,
// stack and cause, never flattened to a string.
// https://docs.powertools.aws.dev/lambda/typescript/latest/core/logger/#logging-errors

/** Keys for the line, or one Error (the logger puts it under `error`). */
export type LogExtra = [Error] | Record<string, unknown>[];

export interface Log {
  debug(message: string, ...extra: LogExtra): void;
  info(message: string, ...extra: LogExtra): void;
  warn(message: string, ...extra: LogExtra): void;
  error(message: string, ...extra: LogExtra): void;
  /** Adds keys to every later line of this record (Powertools' temporary keys). */
  appendKeys?(keys: Record<string, unknown>): void;
}

/** The router's logger: keys appended for one record are reset by the logger before the next. */
export interface RecordLogger extends Log {
  appendKeys(keys: Record<string, unknown>): void;
  resetKeys(): void;
}

/** An unknown thrown value as an Error, so the logger keeps its stack and cause. */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
