// npm run bundle:bin (and npm pack, through prepack): the operator CLI (scripts/cli.ts) as one
// ESM file, dist/bin/graceful-node-termination.mjs, that runs on Node alone: no tsx, no
// node_modules. It is the package's bin.
import { chmodSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { nodeBundle, projectRoot, requireShim } from '../infra/bundling.js';

export const binFile = join(projectRoot, 'dist', 'bin', 'graceful-node-termination.mjs');

export function bundleBin(): number {
  buildSync({
    entryPoints: [join(projectRoot, 'scripts', 'cli.ts')],
    outfile: binFile,
    ...nodeBundle,
    // One file: the commands' dynamic imports are inlined, not split into chunks.
    splitting: false,
    banner: { js: `#!/usr/bin/env node\n${requireShim}` },
    legalComments: 'none',
  });
  chmodSync(binFile, 0o755);
  return statSync(binFile).size;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const started = Date.now();
  const bytes = bundleBin();
  console.log(`bin: dist/bin/graceful-node-termination.mjs: ${(bytes / 1024).toFixed(0)} KiB in ${Date.now() - started} ms`);
}
