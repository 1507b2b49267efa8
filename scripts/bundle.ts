// Bundles the Lambda handler the way the CDK construct does (esbuild, ESM, Node 24), so
// bundle size and cold start can be measured without synthesizing a stack.
import { build } from 'esbuild';
import { mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lambdaBundling } from '../infra/bundling.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'dist', 'lambda');
const outfile = join(outdir, 'index.mjs');
mkdirSync(outdir, { recursive: true });
const result = await build({
  entryPoints: [join(root, 'lambda', 'index.ts')],
  outdir,
  outExtension: { '.js': '.mjs' },
  // Kubeconfig mode's loader (@kubernetes/client-node) goes to a chunk EKS never loads.
  splitting: true,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: lambdaBundling.target,
  minify: lambdaBundling.minify,
  sourcemap: false,
  banner: { js: lambdaBundling.esmBanner },
  mainFields: ['module', 'main'],
  metafile: true,
  logLevel: 'warning',
});
const bytes = statSync(outfile).size;
const entry = Object.entries(result.metafile.outputs).find(([, o]) => o.entryPoint)![1];
const inputs = Object.entries(entry.inputs)
  .map(([path, v]) => [path.replace(/^node_modules\//, '').split('/').slice(0, path.includes('@') ? 2 : 1).join('/'), v.bytesInOutput] as const)
  .reduce((acc, [pkg, n]) => acc.set(pkg, (acc.get(pkg) ?? 0) + n), new Map<string, number>());
console.log(`bundle: ${outfile} ${(bytes / 1024).toFixed(0)} KiB (entry; chunks loaded only in kubeconfig mode: ${Object.keys(result.metafile.outputs).length - 1})`);
for (const [pkg, n] of [...inputs].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(`  ${(n / 1024).toFixed(0).padStart(6)} KiB  ${pkg}`);
