// How the Lambda code is bundled, shared by the CDK construct (local bundling, no Docker)
// and scripts/bundle.ts, so the bundle measured by the benchmark is the one deployed.
import { buildSync, type BuildOptions, type Metafile } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root: the Lambda sources are under lambda/. */
export const projectRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Entry points in one asset: the drainer and the RBAC installer custom resource. The output
 * names are the handlers' module names (handlers.ts), whatever folder the source lives in.
 */
export const lambdaEntries = {
  index: join(projectRoot, 'lambda', 'index.ts'),
  'rbac-installer': join(projectRoot, 'lambda', 'installer', 'rbac-installer.ts'),
} as const;

export const lambdaTarget = 'node24';

/**
 * Some dependencies still call require(); an ESM bundle needs a real one or fails with
 * "Dynamic require of ... is not supported".
 */
export const requireShim =
  "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);";

/** How every Node bundle of ours is built (the Lambda asset, the CLI's bin). */
export const nodeBundle = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: lambdaTarget,
  minify: true,
  sourcemap: false,
  mainFields: ['module', 'main'],
  logLevel: 'warning',
} satisfies BuildOptions;

/** Bundles both entries into outdir as ESM (.mjs) with shared chunks; synchronous for CDK. */
export function bundleLambda(outdir: string): Metafile {
  const result = buildSync({
    entryPoints: lambdaEntries,
    outdir,
    outExtension: { '.js': '.mjs' },
    // Kubeconfig mode's loader (@kubernetes/client-node) goes to a chunk EKS never loads.
    splitting: true,
    ...nodeBundle,
    banner: { js: requireShim },
    metafile: true,
  });
  return result.metafile;
}

/**
 * Bytes a cold start loads for one entry: the entry and every chunk it imports statically
 * (dynamic imports, such as the kubeconfig loader, are only loaded when used).
 */
export function coldStartBytes(metafile: Metafile, entryFile: string): { bytes: number; files: string[] } {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const imp of metafile.outputs[file]?.imports ?? [])
      if (imp.kind === 'import-statement' && !imp.external) visit(imp.path);
  };
  const key = Object.keys(metafile.outputs).find((path) => path.endsWith(`/${entryFile}`));
  if (!key) throw new Error(`bundle has no output ${entryFile}`);
  visit(key);
  return { bytes: [...seen].reduce((n, f) => n + (metafile.outputs[f]?.bytes ?? 0), 0), files: [...seen] };
}
