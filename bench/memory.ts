// Memory of the bundled handler: the peak resident set of a fresh Node process that runs one
// drain through the deployed bundle, beside the peak of an empty Node process. The Lambda
// function's memory setting is chosen from these numbers (see README, Operations).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface DrainMemory {
  /** Peak resident set of the process that ran the drain, MiB. */
  readonly maxRssMiB: number;
  /** Peak resident set of `node` doing nothing, MiB. */
  readonly emptyNodeMaxRssMiB: number;
  /** V8 heap in use when the drain ended, MiB. */
  readonly heapUsedMiB: number;
  /** What the handler returned. */
  readonly result: unknown;
  /** The handler's own log lines (JSON), in order. */
  readonly logs: readonly Record<string, unknown>[];
}

// Peak resident set of this process image, in KiB. Not getrusage's maxRSS: Linux carries
// that across fork and exec, so a child reports at least its parent's size at the fork.
// VmHWM (https://man7.org/linux/man-pages/man5/proc_pid_status.5.html) belongs to the new
// image only.
const peakRssKiB = `(() => {
  const m = /^VmHWM:\\s+(\\d+) kB/m.exec(require('node:fs').readFileSync('/proc/self/status', 'utf8'));
  if (!m) throw new Error('no VmHWM in /proc/self/status: the memory benchmark needs Linux');
  return Number(m[1]);
})()`;

// The child imports the bundle, runs the handler once on the event and prints its usage as
// the last line of stdout (the handler's own log lines come before it).
const child = `
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const { handler } = await import(process.env.BENCH_BUNDLE);
const end = Date.now() + 900000;
const result = await handler(JSON.parse(process.env.BENCH_EVENT), { getRemainingTimeInMillis: () => end - Date.now() });
console.log(JSON.stringify({ benchUsage: { result, maxRssKiB: ${peakRssKiB}, heapUsedBytes: process.memoryUsage().heapUsed } }));
`;

const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;

/**
 * Asynchronous on purpose: the local AWS endpoint the child calls is served by this
 * process, whose event loop must keep running meanwhile.
 */
export async function measureDrainMemory(
  bundlePath: string,
  env: Readonly<Record<string, string | undefined>>,
  event: unknown,
): Promise<DrainMemory> {
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', child], {
    env: { ...env, BENCH_BUNDLE: bundlePath, BENCH_EVENT: JSON.stringify(event) },
    maxBuffer: 64 * 1024 * 1024,
    timeout: 900_000,
  });
  const lines = stdout.trim().split('\n');
  const last = lines.at(-1) ?? '';
  const usage = (JSON.parse(last) as { benchUsage?: { result: unknown; maxRssKiB: number; heapUsedBytes: number } })
    .benchUsage;
  if (!usage) throw new Error(`the drain process printed no usage line; its last line was: ${last.slice(0, 300)}`);
  // Same environment as the drain process: an inherited NODE_OPTIONS (tsx's loaders) would
  // inflate the baseline.
  const empty = await run(process.execPath, ['-e', `process.stdout.write(String(${peakRssKiB}))`], { env: { ...env } });
  return {
    maxRssMiB: mib(usage.maxRssKiB * 1024),
    emptyNodeMaxRssMiB: mib(Number(empty.stdout) * 1024),
    heapUsedMiB: mib(usage.heapUsedBytes),
    result: usage.result,
    logs: lines.slice(0, -1).flatMap(parseLogLine),
  };
}

function parseLogLine(line: string): Record<string, unknown>[] {
  try {
    const parsed: unknown = JSON.parse(line);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? [parsed as Record<string, unknown>]
      : [];
  } catch {
    return [];
  }
}
