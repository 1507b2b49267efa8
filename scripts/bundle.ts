// Bundles the Lambda code exactly as the CDK construct does, so bundle size and cold start
// can be measured without synthesizing a stack; then the operator CLI's single-file bin.
import { mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleLambda, coldStartBytes } from '../infra/bundling.js';
import { bundleBin } from './bundle-bin.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'dist', 'lambda');
const outfile = join(outdir, 'index.mjs');
rmSync(outdir, { recursive: true, force: true });
mkdirSync(outdir, { recursive: true });
const metafile = bundleLambda(outdir);
const loaded = coldStartBytes(metafile, 'index.mjs');
const total = Object.values(metafile.outputs).reduce((n, o) => n + o.bytes, 0);
const inputs = loaded.files
  .flatMap((f) => Object.entries(metafile.outputs[f]!.inputs))
  .map(
    ([path, v]) =>
      [
        path
          .replace(/^node_modules\//, '')
          .split('/')
          .slice(0, path.includes('@') ? 2 : 1)
          .join('/'),
        v.bytesInOutput,
      ] as const,
  )
  .reduce((acc, [pkg, n]) => acc.set(pkg, (acc.get(pkg) ?? 0) + n), new Map<string, number>());
console.log(
  `bundle: ${outfile}: ${(loaded.bytes / 1024).toFixed(0)} KiB loaded at a drainer cold start (${loaded.files.length} files); ` +
    `${(total / 1024).toFixed(0)} KiB in the whole asset (${Object.keys(metafile.outputs).length} files, incl. the RBAC installer and the lazy kubeconfig loader)`,
);
for (const [pkg, n] of [...inputs].sort((a, b) => b[1] - a[1]).slice(0, 8))
  console.log(`  ${(n / 1024).toFixed(0).padStart(6)} KiB  ${pkg}`);
console.log(
  `bin: dist/bin/graceful-node-termination.mjs: ${(bundleBin() / 1024).toFixed(0)} KiB, one file, Node alone (no tsx, no node_modules)`,
);
