// The installable package as a user gets it (npm run bench -- --sections package): builds it
// (npm run package), then the npm tarball's and the Python wheel's sizes, the Lambda asset
// inside them and its cold start, measured as the drain section measures the repository's.
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { measureColdStart } from './cold-start.js';

export interface PackageSizes {
  readonly tarballBytes: number;
  readonly wheelBytes: number;
  readonly assetBytes: number;
  readonly coldStart: { readonly bytes: number; readonly initAboveEmptyMs: number; readonly runs: number };
  readonly buildSeconds: number;
}

const sizeOf = (path: string): number => {
  const stat = statSync(path);
  return stat.isDirectory() ? readdirSync(path).reduce((n, name) => n + sizeOf(join(path, name)), 0) : stat.size;
};

const only = (dir: string, suffix: string): string => {
  const found = readdirSync(dir).filter((f) => f.endsWith(suffix));
  if (found.length !== 1) throw new Error(`expected one *${suffix} in ${dir}, found ${found.join(', ') || 'none'}`);
  return join(dir, found[0]!);
};

export function measurePackage(root: string, say: (line: string) => void, coldRuns: number): PackageSizes {
  say('package: npm run package (jsii, the npm tarball and the Python wheel)');
  const started = Date.now();
  execFileSync('npm', ['run', '--silent', 'package'], { cwd: root, stdio: 'inherit' });
  const buildSeconds = Math.round((Date.now() - started) / 100) / 10;
  const asset = join(root, 'packages', 'construct', 'assets', 'lambda');
  const cold = measureColdStart(join(asset, 'index.mjs'), coldRuns);
  return {
    tarballBytes: statSync(only(join(root, 'dist', 'js'), '.tgz')).size,
    wheelBytes: statSync(only(join(root, 'dist', 'python'), '.whl')).size,
    assetBytes: sizeOf(asset),
    coldStart: {
      bytes: cold.bundleBytes,
      initAboveEmptyMs: Math.round(cold.initMsMedian - cold.emptyNodeMsMedian),
      runs: cold.runs,
    },
    buildSeconds,
  };
}
