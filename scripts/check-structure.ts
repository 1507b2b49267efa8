// npm run lint (after oxlint): the layering the layout promises, checked on the import graph.
// - adapters/ talk to Kubernetes and AWS behind the ports; they never import a use case;
// - the use cases and the cluster model never import an adapter (only the runtime and the
//   installer, the composition roots, wire them);
// - infra/ imports only the shared configuration, the Event texts and the RBAC definition;
// - nothing under lambda/ imports infra/, test/, scripts/, demo/ or bench/;
// - the construct and what it shares with the handler import no npm package but aws-cdk-lib and
//   constructs (the shared modules not even those): the construct package (packages/construct)
//   ships them with no dependency of its own.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function files(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(root, path)).isDirectory()) return files(path);
    return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  });
}

/** Relative imports of a file, resolved to repository paths (.js -> .ts). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const specs = [...text.matchAll(/(?:from\s+|import\s*\(\s*)'(\.[^']+)'/g)].map((m) => m[1]!);
  return specs.map((s) => relative(root, resolve(root, dirname(file), s)).replace(/\.js$/, '.ts'));
}

const useCases = [
  'lambda/termination/',
  'lambda/termination-policy/',
  'lambda/launch/',
  'lambda/refresh/',
  'lambda/reconcile/',
  'lambda/notices/',
  'lambda/eviction/',
  'lambda/repair/',
];
const infraMayImport = new Set([
  'lambda/shared/config.ts',
  'lambda/shared/config-variables.ts',
  'lambda/shared/deadline-policy.ts',
  'lambda/shared/group-tags.ts',
  'lambda/shared/resume-window.ts',
  'lambda/cluster/events.ts',
  'lambda/installer/rbac.ts',
]);

const rules: {
  readonly applies: (file: string) => boolean;
  readonly forbids: (target: string) => boolean;
  readonly why: string;
}[] = [
  {
    applies: (f) => f.startsWith('lambda/adapters/'),
    forbids: (t) =>
      useCases.some((u) => t.startsWith(u)) ||
      /^lambda\/(router|trigger|runtime)\.ts$/.test(t) ||
      t.startsWith('lambda/inbound/'),
    why: 'an adapter imports a use case',
  },
  {
    applies: (f) =>
      useCases.some((u) => f.startsWith(u)) ||
      f.startsWith('lambda/cluster/') ||
      f.startsWith('lambda/shared/') ||
      f.startsWith('lambda/inbound/'),
    forbids: (t) => t.startsWith('lambda/adapters/'),
    why: 'a use case or the model imports an adapter (only runtime.ts and the installer wire them)',
  },
  {
    applies: (f) => f.startsWith('infra/'),
    forbids: (t) => t.startsWith('lambda/') && !infraMayImport.has(t),
    why: 'infra/ imports more of lambda/ than the configuration, the Event texts and the RBAC',
  },
  {
    applies: (f) => f.startsWith('lambda/'),
    forbids: (t) => /^(infra|test|scripts|demo|bench)\//.test(t),
    why: 'lambda/ imports tooling',
  },
];

/** Bare (package) imports of a file: `aws-cdk-lib`, `node:fs`, `esbuild`. */
function packagesOf(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  return [...text.matchAll(/(?:from\s+|import\s*\(\s*)'([^.'][^']*)'/g)].map((m) => m[1]!);
}

/**
 * The construct at synthesis: infra/ but the app, the synthesis-time bundling and its caller,
 * and the release template's generator (npm run release: the construct plus cdk-nag, in the repository only).
 */
const synthesisTimeOnly = new Set([
  'infra/app.ts',
  'infra/bundling.ts',
  'infra/lambda-code.ts',
  'infra/release.ts',
  'infra/release-rewrite.ts',
  'infra/release-merge.ts',
  'infra/release-variants.ts',
  'infra/release-parameters.ts',
  'infra/release-coverage.ts',
]);
const constructFiles = files('infra').filter((f) => !synthesisTimeOnly.has(f));
const packageRules = [
  {
    files: constructFiles,
    allows: /^(aws-cdk-lib(\/.*)?|constructs|node:.+)$/,
    why: 'the construct package has aws-cdk-lib and constructs as its only (peer) dependencies',
  },
  {
    files: [...infraMayImport],
    allows: /^node:.+$/,
    why: 'what the construct shares with the handler has no runtime dependency',
  },
];

const problems: string[] = [];
for (const file of [...files('lambda'), ...files('infra')]) {
  for (const target of importsOf(file)) {
    for (const rule of rules)
      if (rule.applies(file) && rule.forbids(target)) problems.push(`${file} imports ${target}: ${rule.why}`);
  }
}
for (const rule of packageRules) {
  for (const file of rule.files)
    for (const name of packagesOf(file))
      if (!rule.allows.test(name)) problems.push(`${file} imports ${name}: ${rule.why}`);
}
if (problems.length > 0) {
  console.error(problems.join('\n'));
  console.error(`${problems.length} layering problem(s)`);
  process.exit(1);
}
console.log(`layering: ${files('lambda').length + files('infra').length} files, no problem`);
