// One environment variable: its name, what it accepts, and how it is read and written.
export interface Variable<T> {
  readonly name: string;
  readonly description: string;
  readonly accepts: string;
  readonly default?: T;
  parse(raw: string): T | undefined;
  format(value: T): string;
}

/** Defines one variable, its value type checked against parse, format and default. */
export const variable = <T>(v: Variable<T>): Variable<T> => v;

/** An integer from min to max, nothing else (no sign, no fraction, no unit). */
export const integer =
  (min: number, max: number) =>
  (raw: string): number | undefined => {
    if (!/^\d+$/.test(raw.trim())) return undefined;
    const n = Number(raw.trim());
    return n >= min && n <= max ? n : undefined;
  };

export const flag = (raw: string): boolean | undefined =>
  raw.trim() === 'true' ? true : raw.trim() === 'false' ? false : undefined;
