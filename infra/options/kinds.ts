// What an option's value looks like. The same text is a `cdk deploy -c` value and a CloudFormation
// parameter value, so one parser reads both, and the parameter's Type, Default and constraints
// say the same thing in CloudFormation's words. Empty text is never parsed: it means "not set".
import type { JsonObject } from '../release-rewrite.js';

export interface Kind<T> {
  /** The parameter's Type, Default and constraints (its Description is the option's). */
  readonly parameter: JsonObject;
  /** What it accepts, in words: the context's errors say it. */
  readonly accepts: string;
  /** The value the text stands for; undefined: not accepted. */
  parse(text: string): T | undefined;
}

/** A variable of the handler's definitions (lambda/shared/config-variables.ts). */
interface Variable {
  readonly default?: unknown;
  parse(raw: string): unknown;
}

/** The ends of the integer range a variable's parser accepts (it accepts one interval). */
export function rangeOf(variable: Variable): [number, number] {
  const ok = (n: number) => variable.parse(String(n)) !== undefined;
  const edge = (yes: number, no: number): number => {
    while (Math.abs(no - yes) > 1) {
      const mid = Math.floor((yes + no) / 2);
      if (ok(mid)) yes = mid;
      else no = mid;
    }
    return yes;
  };
  const start = Number(variable.default);
  return [ok(0) ? 0 : edge(start, 0), edge(start, 10_000_000)];
}

/** A whole number from min (to max): the parameter's MinValue (and MaxValue). */
export function wholeNumber(o: { min: number; max?: number; default?: number; unit?: string }): Kind<number> {
  const unit = o.unit === undefined ? '' : ` of ${o.unit}`;
  const max = o.max ?? Number.MAX_SAFE_INTEGER;
  return {
    parameter: {
      Type: 'Number',
      ...(o.default !== undefined ? { Default: o.default } : {}),
      MinValue: o.min,
      ...(o.max !== undefined ? { MaxValue: o.max } : {}),
    },
    accepts: `a whole number${unit} from ${o.min}${o.max !== undefined ? ` to ${o.max}` : ''}`,
    parse: (text) => (/^\d+$/.test(text) && Number(text) >= o.min && Number(text) <= max ? Number(text) : undefined),
  };
}

/** A whole number with the variable's default and range (or `range` where the construct is stricter). */
export const numberOf = (variable: Variable, unit?: string, range?: [number, number]): Kind<number> => {
  const [min, max] = range ?? rangeOf(variable);
  return wholeNumber({ min, max, default: Number(variable.default), ...(unit !== undefined ? { unit } : {}) });
};

export const secondsOf = (variable: Variable, range?: [number, number]): Kind<number> =>
  numberOf(variable, 'seconds', range);

/** One of a few whole numbers. */
export function numberChoice(values: readonly number[], defaultValue: number, unit: string): Kind<number> {
  return {
    parameter: { Type: 'Number', Default: defaultValue, AllowedValues: [...values] },
    accepts: `one of ${values.join(', ')} (${unit})`,
    parse: (text) => (values.map(String).includes(text) ? Number(text) : undefined),
  };
}

export function flag(defaultValue: boolean): Kind<boolean> {
  return {
    parameter: { Type: 'String', Default: String(defaultValue), AllowedValues: ['true', 'false'] },
    accepts: 'true or false',
    parse: (text) => (text === 'true' ? true : text === 'false' ? false : undefined),
  };
}

export function choice<T extends string>(values: readonly T[], defaultValue: T): Kind<T> {
  return {
    parameter: { Type: 'String', Default: defaultValue, AllowedValues: [...values] },
    accepts: values.join(', '),
    parse: (text) => values.find((v) => v === text),
  };
}

/**
 * Text. With a pattern, CloudFormation checks it (AllowedPattern, anchored) and so does the
 * context; `check` reads what a pattern cannot (JSON, windows, selectors) for the context, as
 * the handler reads it. Without a default the option is required; with '' it is optional.
 */
export function text(o: {
  accepts: string;
  default?: string;
  pattern?: RegExp;
  maxLength?: number;
  check?: (text: string) => boolean;
}): Kind<string> {
  const pattern = o.pattern?.source;
  return {
    parameter: {
      Type: 'String',
      ...(o.default !== undefined ? { Default: o.default } : {}),
      ...(pattern !== undefined ? { AllowedPattern: o.default === '' ? `^$|${pattern}` : pattern } : {}),
      ...(o.maxLength !== undefined ? { MaxLength: o.maxLength } : {}),
    },
    accepts: o.accepts,
    parse: (t) =>
      (o.pattern === undefined || o.pattern.test(t)) &&
      (o.maxLength === undefined || t.length <= o.maxLength) &&
      (o.check?.(t) ?? true)
        ? t
        : undefined,
  };
}

/** A comma-separated list (a CommaDelimitedList parameter); without a default, required. */
export function list(o: { accepts: string; required?: boolean; item?: RegExp }): Kind<string[]> {
  return {
    parameter: { Type: 'CommaDelimitedList', ...(o.required ? {} : { Default: '' }) },
    accepts: o.accepts,
    parse: (t) => {
      const items = t.split(',').map((s) => s.trim());
      return items.every((i) => i !== '' && (o.item?.test(i) ?? true)) ? items : undefined;
    },
  };
}
