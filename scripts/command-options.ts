// The options every operator command shares, parsed as kubectl and the AWS CLI parse theirs:
// an unknown option or a bad value is bad usage (exit 2) with the valid ones named, never a
// stack trace or a guess.
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';

/** Bad usage: the command line, a value, or a setting the command needs and cannot find. Exit 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** A blocker the command found (the preflight): exit 3. */
export const exitCodes = { ok: 0, failed: 1, usage: 2, blocker: 3, interrupted: 130 } as const;

export const outputFormats = ['table', 'json', 'yaml'] as const;
export type OutputFormat = (typeof outputFormats)[number];

/** Every command takes these; `--json` is kept as the short way to say `-o json`. */
export const commonOptions = {
  help: { type: 'boolean', short: 'h', default: false },
  output: { type: 'string', short: 'o' },
  json: { type: 'boolean', default: false },
  region: { type: 'string' },
  profile: { type: 'string' },
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
} as const satisfies ParseArgsOptionsConfig;

export const commonUsage = `  -o, --output FORMAT      table (default), json or yaml; --json is -o json
  --region R               the AWS region (default: the SDK's chain: AWS_REGION, the profile's region)
  --profile P              the AWS profile (default: AWS_PROFILE, then default)
  --kubeconfig FILE        the kubeconfig (default: KUBECONFIG, then ~/.kube/config)
  --context C              the kubeconfig context (default: its current context)
  -h, --help               this text`;

const optionNames = (options: ParseArgsOptionsConfig) =>
  Object.entries(options)
    .map(([name, o]) => (o.short ? `-${o.short}/--${name}` : `--${name}`))
    .join(', ');

/**
 * parseArgs with the common options added, and its errors turned into UsageErrors that name the
 * valid options; more positionals than `positionals` names are refused too.
 */
export function parseCommand<const O extends ParseArgsOptionsConfig>(
  command: string,
  args: readonly string[],
  options: O,
  positionals: readonly string[],
) {
  const all = { ...commonOptions, ...options };
  let parsed;
  try {
    parsed = parseArgs({ args: [...args], options: all, allowPositionals: true, strict: true });
  } catch (error) {
    const said = error instanceof Error ? error.message.split('.')[0]! : String(error);
    const text = said.charAt(0).toLowerCase() + said.slice(1);
    throw new UsageError(`${text}; valid options: ${optionNames(all)} (see ${command} --help)`, { cause: error });
  }
  if (parsed.positionals.length > positionals.length) {
    const extra = parsed.positionals.slice(positionals.length).join(' ');
    throw new UsageError(
      `unexpected argument ${JSON.stringify(extra)}; it takes ${positionals.length === 0 ? 'no argument' : positionals.join(' ')} (see ${command} --help)`,
    );
  }
  return parsed;
}

/** One of the values allowed, or a UsageError naming them. */
export function choice<const T extends string>(
  option: string,
  value: string | undefined,
  valid: readonly T[],
  fallback: T,
): T {
  if (value === undefined) return fallback;
  if ((valid as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`${option} ${JSON.stringify(value)} is not valid; use one of: ${valid.join(', ')}`);
}

/** -o/--output, with --json as its alias. */
export function outputFormat(values: { output?: string | undefined; json?: boolean | undefined }): OutputFormat {
  if (values.json && values.output !== undefined && values.output !== 'json')
    throw new UsageError(`--json and -o ${values.output} disagree; give one of them`);
  return values.json ? 'json' : choice('-o/--output', values.output, outputFormats, 'table');
}

/** An integer option, or a UsageError. */
export function integer(option: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n)) throw new UsageError(`${option} ${JSON.stringify(raw)} is not valid: expected an integer`);
  return n;
}
