// Cold start of the bundled handler: median import-and-construct time of fresh Node
// processes, beside the median of an empty Node process, measured in the same run.
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';

export interface ColdStart {
  readonly bundleBytes: number;
  readonly initMsMedian: number;
  readonly emptyNodeMsMedian: number;
  readonly runs: number;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** Wall time of one fresh `node` process that imports `module` (or nothing) and exits. */
function timeProcess(module: string | undefined, env: NodeJS.ProcessEnv): number {
  const code = module ? `await import(${JSON.stringify(module)})` : '';
  const start = process.hrtime.bigint();
  execFileSync(process.execPath, ['--input-type=module', '-e', code], { env, stdio: 'inherit' });
  return Number(process.hrtime.bigint() - start) / 1e6;
}

export function measureColdStart(bundlePath: string, runs = 20): ColdStart {
  const env = {
    PATH: process.env['PATH'],
    AWS_REGION: 'eu-west-1',
    AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
    AWS_SECRET_ACCESS_KEY: 'secret',
    CLUSTER_NAME: 'bench',
    AUTO_SCALING_GROUP_NAMES: 'bench',
    LIFECYCLE_HOOK_NAMES: 'bench-terminate',
  };
  const init: number[] = [];
  const empty: number[] = [];
  // Interleaved so that machine noise hits both series alike.
  for (let i = 0; i < runs; i++) {
    empty.push(timeProcess(undefined, env));
    init.push(timeProcess(bundlePath, env));
  }
  return { bundleBytes: statSync(bundlePath).size, initMsMedian: median(init), emptyNodeMsMedian: median(empty), runs };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = measureColdStart(join(process.cwd(), 'dist', 'lambda', 'index.mjs'), Number(process.argv[2] ?? 20));
  console.log(JSON.stringify({ ...result, initAboveEmptyMs: result.initMsMedian - result.emptyNodeMsMedian }, null, 2));
}
