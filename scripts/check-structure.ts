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
/**
 * The only imports from one use case into another: a termination and a reboot drain through
 * eviction/, and the reconciler takes back the marks of the features that set them.
 */
const useCaseImports: readonly (readonly [string, string])[] = [
  ['lambda/termination/', 'lambda/eviction/'],
  ['lambda/repair/', 'lambda/eviction/'],
  ['lambda/reconcile/', 'lambda/launch/'],
  ['lambda/reconcile/', 'lambda/refresh/'],
  ['lambda/reconcile/', 'lambda/repair/'],
  ['lambda/reconcile/', 'lambda/termination/'],
  ['lambda/reconcile/', 'lambda/termination-policy/'],
];
const infraMayImport = new Set([
  'lambda/shared/config.ts',
  'lambda/shared/config-variables.ts',
  'lambda/shared/deadline-policy.ts',
  'lambda/shared/group-tags.ts',
  'lambda/shared/resume-window.ts',
  'lambda/cluster/events/log-messages.ts',
  'lambda/installer/rbac.ts',
  'lambda/installer/rbac-yaml.ts',
  'lambda/installer/installed-objects.ts',
]);

const rules: {
  readonly applies: (file: string) => boolean;
  readonly forbids: (target: string, file: string) => boolean;
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
    applies: (f) => f.startsWith('lambda/shared/'),
    forbids: (t) => t.startsWith('lambda/') && !t.startsWith('lambda/shared/'),
    why: 'shared/ is the ground: it imports nothing of lambda/ but shared/',
  },
  {
    applies: (f) => useCases.some((u) => f.startsWith(u)),
    forbids: (t, f) => {
      const [from, to] = [useCases.find((u) => f.startsWith(u)), useCases.find((u) => t.startsWith(u))];
      return to !== undefined && to !== from && !useCaseImports.some(([a, b]) => a === from && b === to);
    },
    why: 'a use case imports another use case (only the pairs in useCaseImports may)',
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
      if (rule.applies(file) && rule.forbids(target, file)) problems.push(`${file} imports ${target}: ${rule.why}`);
  }
}
for (const rule of packageRules) {
  for (const file of rule.files)
    for (const name of packagesOf(file))
      if (!rule.allows.test(name)) problems.push(`${file} imports ${name}: ${rule.why}`);
}
problems.push(...importCircles([...files('lambda'), ...files('infra')]));
problems.push(...[...files('lambda'), ...files('infra')].flatMap(longLines));
if (problems.length > 0) {
  console.error(problems.join('\n'));
  console.error(`${problems.length} layering problem(s)`);
  process.exit(1);
}
console.log(`layering: ${files('lambda').length + files('infra').length} files, no problem`);

/**
 * Circles in the import graph, type-only imports included (oxlint's import/no-cycle leaves them
 * out): a port that imports a feature's port back ties the two together as surely as a value.
 * Tarjan's strongly connected components; each circle is named once with every file in it.
 */
function importCircles(all: readonly string[]): string[] {
  const known = new Set(all);
  const graph = new Map(all.map((f) => [f, importsOf(f).filter((t) => known.has(t))]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const members: string[] = [];
    for (let w = stack.pop(); w !== undefined; w = w === v ? undefined : stack.pop()) {
      onStack.delete(w);
      members.push(w);
    }
    if (members.length > 1) circles.push(`an import circle (type imports count): ${members.sort().join(' -> ')}`);
  };
  for (const f of all) if (!index.has(f)) visit(f);
  return circles;
}

/** The production code's width: 120 characters, but for a line that is only a link (it cannot be broken). */
function longLines(file: string): string[] {
  return readFileSync(join(root, file), 'utf8')
    .split('\n')
    .flatMap((line, i) =>
      line.length > 120 && !/^\s*(\/\/|\*)\s*https?:\/\/\S+\s*$/.test(line)
        ? [`${file}:${i + 1} is ${line.length} characters long: at most 120 (split the comment or the string)`]
        : [],
    );
}
