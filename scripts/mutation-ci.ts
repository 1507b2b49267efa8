// npm run mutation:ci, the mutation check CI runs: Stryker on a fixed part of the decision core
// (stryker.ci.config.mjs), failing below its floor, and a floor that only goes up. The whole core
// takes far longer (npm run mutation; docs/reliability.md#mutation-score has the numbers).
//   node scripts/require-node.mjs && tsx scripts/mutation-ci.ts
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const configFile = 'stryker.ci.config.mjs';
const reportFile = join(root, 'reports', 'mutation', 'ci.json');

/** The floor a config text declares (`export const floor = 81.5;`). */
export function floorIn(text: string): number | undefined {
  const m = /export const floor = (\d+(?:\.\d+)?);/.exec(text);
  return m === null ? undefined : Number(m[1]);
}

/** Stryker's mutation score: killed and timed-out mutants among all valid ones (not ignored, not failing to run). */
export function mutationScore(report: { files: Record<string, { mutants: { status: string }[] }> }): {
  score: number;
  counts: Record<string, number>;
} {
  const counts: Record<string, number> = {};
  for (const file of Object.values(report.files))
    for (const m of file.mutants) counts[m.status] = (counts[m.status] ?? 0) + 1;
  const detected = (counts['Killed'] ?? 0) + (counts['Timeout'] ?? 0);
  const valid = detected + (counts['Survived'] ?? 0) + (counts['NoCoverage'] ?? 0);
  return { score: valid === 0 ? 0 : (100 * detected) / valid, counts };
}

/**
 * The highest floor any commit recorded, when git has the history (a shallow clone has little of it): the floor may
 * rise, never fall, neither in one commit nor over several.
 */
function recordedFloor(): { floor: number; commit: string } | undefined {
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  try {
    let best: { floor: number; commit: string } | undefined;
    for (const commit of git('log', '--format=%h', '--', configFile).split('\n').filter(Boolean)) {
      const floor = floorIn(git('show', `${commit}:${configFile}`));
      if (floor !== undefined && (best === undefined || floor > best.floor)) best = { floor, commit };
    }
    return best;
  } catch {
    return undefined;
  }
}

function main(): number {
  const floor = floorIn(readFileSync(join(root, configFile), 'utf8'));
  if (floor === undefined) {
    console.error(`${configFile} declares no floor (export const floor = <percent>;)`);
    return 1;
  }
  const before = recordedFloor();
  if (before !== undefined && floor < before.floor) {
    console.error(
      `the mutation floor went down, to ${floor} % from the ${before.floor} % commit ${before.commit} recorded: ` +
        `it only goes up (${configFile})`,
    );
    return 1;
  }
  console.log(`mutation check: ${configFile}, floor ${floor} %`);
  rmSync(reportFile, { force: true }); // a report left by an earlier run must not stand for this one
  const stryker = spawnSync('npx', ['stryker', 'run', configFile], { cwd: root, stdio: 'inherit' });
  if (!existsSync(reportFile)) {
    console.error(`Stryker wrote no report (exit ${stryker.status}): its log above says why`);
    return 1;
  }
  const report = JSON.parse(readFileSync(reportFile, 'utf8')) as Parameters<typeof mutationScore>[0];
  const { score, counts } = mutationScore(report);
  const told = Object.entries(counts)
    .map(([status, n]) => `${n} ${status}`)
    .join(', ');
  console.log(`mutation score ${score.toFixed(2)} % (${told}); floor ${floor} %`);
  if (score < floor) {
    console.error('below the floor: kill the survivors (reports/mutation/ci.html) or show them equivalent');
    return 1;
  }
  if (stryker.status !== 0) {
    console.error(`Stryker failed (exit ${stryker.status}): its log above says why`);
    return 1;
  }
  if (score >= floor + 1)
    console.log(
      `the score is a point or more above the floor: raise it to ${Math.floor(score * 10) / 10} in ${configFile}`,
    );
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exit(main());
