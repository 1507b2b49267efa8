// One environment variable: its name, what it accepts, and how it is read and written.
export interface Variable<T> {
  readonly name: string;
  readonly description: string;
  readonly accepts: string;
  readonly default?: T;
  parse(raw: string): T | undefined;
  format(value: T): string;
}
