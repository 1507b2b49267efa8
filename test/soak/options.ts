// The soak's command line (run.ts), parsed and checked: a bad value is named with the range that would do.

export interface Options {
  readonly seeds: readonly number[];
  readonly minutes: number;
  readonly shrink: boolean;
  readonly report: string | undefined;
  /** A folder for each run's observations and handler log (JSON), to look into a violation. */
  readonly keep: string | undefined;
}

const usage =
  'usage: npm run soak -- --seed <integer> --minutes <number> [--seeds 1,2,3] [--no-shrink] ' +
  '[--report <file.json>] [--keep <dir>]';

export function parseOptions(args: readonly string[]): Options {
  let seeds: number[] = [1];
  let minutes = 10;
  let doShrink = true;
  let report: string | undefined;
  let keep: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const value = () => {
      const v = args[++i];
      if (v === undefined) throw new Error(`${arg} needs a value; ${usage}`);
      return v;
    };
    const seed = (v: string) => {
      if (!/^\d+$/.test(v) || Number(v) > 0xffffffff)
        throw new Error(`--seed ${v} is invalid: expected an integer from 0 to 4294967295`);
      return Number(v);
    };
    if (arg === '--seed') seeds = [seed(value())];
    else if (arg === '--seeds') seeds = value().split(',').map(seed);
    else if (arg === '--minutes') {
      const v = value();
      minutes = Number(v);
      if (!Number.isFinite(minutes) || minutes < 0.5 || minutes > 600)
        throw new Error(`--minutes ${v} is invalid: expected a number from 0.5 to 600`);
    } else if (arg === '--no-shrink') doShrink = false;
    else if (arg === '--report') report = value();
    else if (arg === '--keep') keep = value();
    else throw new Error(`unknown option ${arg}; ${usage}`);
  }
  return { seeds, minutes, shrink: doShrink, report, keep };
}
