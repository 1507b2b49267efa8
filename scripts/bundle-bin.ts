// npm run bundle:bin (and npm pack in packages/cli, through its prepack): the operator CLI
// (scripts/cli.ts) as one ESM file, packages/cli/bin/graceful-node-termination.mjs, that runs on
// Node alone: no tsx, no node_modules. It is the CLI package's bin.
import { chmodSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { nodeBundle, projectRoot, requireShim } from '../infra/bundling.js';

export const cliPackageDir = join(projectRoot, 'packages', 'cli');
export const binFile = join(cliPackageDir, 'bin', 'graceful-node-termination.mjs');
export const requiredNodeMajor = 24;

/**
 * The bin's first statement: older Nodes are refused in one line before any of the bundle
 * runs (on Node 20 the bundled SDK crashes at load with a minified dump). Static imports are
 * hoisted above it, so the bundle's only ones are Node built-ins that load on any Node.
 */
export const nodeGuard =
  `if (Number(process.versions.node.split('.')[0]) < ${requiredNodeMajor}) { ` +
  `console.error('graceful-node-termination needs Node.js ${requiredNodeMajor} or later; this is Node.js ' + process.versions.node + ' (' + process.execPath + ')'); ` +
  `process.exit(1); }`;

export function bundleBin(): number {
  const { version } = JSON.parse(readFileSync(join(cliPackageDir, 'package.json'), 'utf8')) as { version: string };
  buildSync({
    entryPoints: [join(projectRoot, 'scripts', 'cli.ts')],
    outfile: binFile,
    ...nodeBundle,
    // One file: the commands' dynamic imports are inlined, not split into chunks.
    splitting: false,
    define: { GNT_CLI_VERSION: JSON.stringify(version) },
    banner: { js: `#!/usr/bin/env node\n${nodeGuard}\n${requireShim}` },
    legalComments: 'none',
  });
  chmodSync(binFile, 0o755);
  return statSync(binFile).size;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const started = Date.now();
  const bytes = bundleBin();
  console.log(`bin: packages/cli/bin/graceful-node-termination.mjs: ${(bytes / 1024).toFixed(0)} KiB in ${Date.now() - started} ms`);
}
