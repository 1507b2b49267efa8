// npm run soak -- --seed S --minutes M: a chaos soak on the local control plane (issue 39). The
// seed draws the cluster, the workloads and a timeline of lifecycle events and faults
// (scenario.ts); the real handler runs it as Lambda would (lambda.ts), against the AWS stand-ins
// (auto-scaling.ts); the invariants (invariants/) are checked from outside. A violation prints the
// seed, the timeline and the invariant, then the shortest timeline found that still fails.
//   --seeds 1,2,3   several seeds, one after another, on one plane
//   --no-shrink     report a violation without shrinking it
//   --report FILE   the runs' numbers as JSON (docs/reliability.md's table is made from it)
//   --keep DIR      each run's observations and the handler's log lines, to look into a violation
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { installSoakClock } from './clock.js';
import { startPlane } from '../cluster/plane/plane.js';
import { generateScenario } from './scenario.js';
import { runScenario, describe, type RunResult } from './runner.js';
import { shrink } from './shrink.js';
import { summary } from './report.js';
import { invariants } from './invariants/index.js';
import { parseOptions } from './options.js';

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  const clock = installSoakClock();
  const t0 = clock.realNow();
  const say = (line: string) =>
    console.log(`[soak ${((clock.realNow() - t0) / 1000).toFixed(1).padStart(6)}s] ${line}`);
  // After the start only a process that exits is told: the kwok watchdog reads soak time (Date), and a clock
  // skip makes every new Pending pod look overdue to it (it touches the pod once: harmless).
  let started = false;
  const plane = await startPlane({ log: (line) => (!started || / exited /.test(line)) && say(`plane: ${line}`) });
  started = true;
  // Ctrl-C or a CI timeout: the plane's processes go with the soak, not left behind.
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      say(`${signal}: stopping the control plane`);
      void plane.stop().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    });
  const results: RunResult[] = [];
  let failed = false;
  let run = 0;
  try {
    for (const seed of options.seeds) {
      const scenario = generateScenario(seed, options.minutes);
      say(
        `seed ${seed}: ${scenario.timeline.length} events over ${options.minutes} min; ` +
          `settings ${JSON.stringify(scenario.settings)}`,
      );
      const result = await runScenario(scenario, { plane, run: ++run, clock, say });
      results.push(result);
      if (options.keep) keepRun(options.keep, result);
      console.log(summary(result));
      if (result.violations.length === 0) continue;
      failed = true;
      console.log(`\nVIOLATION with seed ${seed} (npm run soak -- --seed ${seed} --minutes ${options.minutes}):`);
      for (const v of result.violations) console.log(`  ${v.invariant}: ${v.message}`);
      console.log('the timeline:');
      for (const p of result.played)
        console.log(`  ${(p.event.atMs / 1000).toFixed(1).padStart(6)}s ${describe(p.event)} -> ${p.outcome}`);
      if (options.shrink) {
        const shortest = await shrink(result, { plane, clock, say, nextRun: () => ++run });
        console.log(
          `\nshortest timeline that still fails (${shortest.scenario.timeline.length} of ` +
            `${scenario.timeline.length} events, ${shortest.runs} runs):`,
        );
        for (const e of shortest.scenario.timeline)
          console.log(`  ${(e.atMs / 1000).toFixed(1).padStart(6)}s ${describe(e)}`);
        for (const v of shortest.violations) console.log(`  ${v.invariant}: ${v.message}`);
      }
    }
  } finally {
    await plane.stop();
  }
  if (options.report) {
    writeFileSync(options.report, JSON.stringify(results.map(reportOf), null, 2));
    say(`report written to ${options.report}`);
  }
  say(failed ? 'FAILED: an invariant was violated' : `passed: ${results.length} run(s), no invariant violated`);
  return failed ? 1 : 0;
}

/** A run in numbers (docs/reliability.md's table is made from these). */
function reportOf(r: RunResult): Record<string, unknown> {
  const events: Record<string, number> = {};
  for (const p of r.played) events[p.event.kind] = (events[p.event.kind] ?? 0) + 1;
  return {
    seed: r.scenario.seed,
    minutes: r.scenario.minutes,
    durationMs: r.durationMs,
    settings: r.scenario.settings,
    nodes: r.scenario.nodes.length,
    events,
    stats: r.stats,
    checks: Object.fromEntries(
      invariants.map((i) => [
        i.name,
        { checked: i.counts(r.observations), violations: r.violations.filter((v) => v.invariant === i.name).length },
      ]),
    ),
    violations: r.violations,
    timeline: r.played.map((p) => `${(p.event.atMs / 1000).toFixed(1)}s ${describe(p.event)} -> ${p.outcome}`),
  };
}

function keepRun(dir: string, r: RunResult): void {
  mkdirSync(dir, { recursive: true });
  const base = join(dir, `seed-${r.scenario.seed}-run-${r.run}`);
  writeFileSync(`${base}.observations.json`, JSON.stringify({ ...r, stats: r.stats }, null, 1));
  writeFileSync(`${base}.handler.jsonl`, r.logs.map((l) => JSON.stringify(l)).join('\n'));
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(2);
  },
);
