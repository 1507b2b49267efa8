// npm run bundle:bin (and npm pack in packages/cli, through its prepack): the operator CLI
// (scripts/cli.ts) as one ESM bundle, packages/cli/bin/cli.mjs, that runs on Node alone (no
// tsx, no node_modules), behind a tiny entry, packages/cli/bin/graceful-node-termination.mjs
// (the package's bin). The entry is written so that any Node parses it: it refuses Node < 24
// in one line before the bundle is even read (on Node 20 the bundled SDK crashes at load with
// a minified dump), answers --version without loading 2 MB, and turns on Node's compile cache
// so the bundle is compiled once per machine, not on every run.
import { chmodSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { nodeBundle, projectRoot, requireShim } from '../infra/bundling.js';
import { buildVersion } from './build-version.js';

export const cliPackageDir = join(projectRoot, 'packages', 'cli');
export const binFile = join(cliPackageDir, 'bin', 'graceful-node-termination.mjs');
export const bundleFile = join(cliPackageDir, 'bin', 'cli.mjs');
export const requiredNodeMajor = 24;

/** The bin: plain JavaScript any Node runs, the version guard its first statement. */
export function entrySource(version: string): string {
  return `#!/usr/bin/env node
// graceful-node-termination ${version}: the guard, --version, then the bundle (cli.mjs).
if (Number(process.versions.node.split('.')[0]) < ${requiredNodeMajor}) {
  console.error('graceful-node-termination needs Node.js ${requiredNodeMajor} or later; this is Node.js ' + process.versions.node + ' (' + process.execPath + ')');
  process.exit(1);
}
const first = process.argv[2];
if (first === '--version' || first === '-v' || first === 'version') {
  console.log('graceful-node-termination ${version} (node ' + process.versions.node + ')');
  process.exit(0);
}
const { enableCompileCache } = await import('node:module');
enableCompileCache?.();
await import('./cli.mjs');
`;
}

/** Builds both files; returns the bundle's size in bytes. */
export function bundleBin(): number {
  // The build's version (0.4.0-dev.<commits>+<commit> unless the commit is the tag v0.4.0).
  const { version } = buildVersion(projectRoot);
  buildSync({
    entryPoints: [join(projectRoot, 'scripts', 'cli.ts')],
    outfile: bundleFile,
    ...nodeBundle,
    // One file: the commands' dynamic imports are inlined, not split into chunks.
    splitting: false,
    define: { GNT_CLI_VERSION: JSON.stringify(version) },
    banner: { js: requireShim },
    legalComments: 'none',
  });
  writeFileSync(binFile, entrySource(version));
  chmodSync(binFile, 0o755);
  return statSync(bundleFile).size;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const started = Date.now();
  const bytes = bundleBin();
  console.log(`bin: packages/cli/bin/cli.mjs: ${(bytes / 1024).toFixed(0)} KiB in ${Date.now() - started} ms`);
}
