// Every TypeScript snippet in the docs compiles against the code it documents: each ```ts block
// of docs/*.md and README.md, and each inline `prop: value` of a construct prop, is written
// into .cache/snippets/ and type-checked with the repository's tsc and tsconfig.
//
// A snippet may leave out what its page has already said: imports of aws-cdk-lib's App, Aspects,
// Duration, RemovalPolicy, Stack and its autoscaling, ec2, eks, iam, logs and sns modules, and of
// the construct package's names; it may use `this` (a Stack), `app`, `stack`, `cluster`,
// `workers` (a group), `drainer` (the construct), `vpc`, `instanceType` and `machineImage`.
// Anything else it uses it must say. `cdk-graceful-node-termination` and `./infra/...` resolve
// to the repository's sources. A block whose every line starts with a line number (`12:`) quotes
// source lines and is not a snippet.
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { propertyCoverage } from '../../../infra/release-coverage.js';
import { constructExports } from '../../../scripts/package/sources.js';

const root = join(import.meta.dirname, '..', '..', '..');
const dir = join(root, '.cache', 'snippets');
const toRoot = relative(dir, root);

interface Snippet {
  readonly page: string;
  readonly line: number;
  readonly code: string;
}

const pages = [
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f)),
  'README.md',
];

function blocksOf(page: string): Snippet[] {
  const text = readFileSync(join(root, page), 'utf8');
  return [...text.matchAll(/^( *)```(?:ts|typescript)\n([^]*?)^\1```$/gm)]
    .map((m) => ({
      page,
      line: text.slice(0, m.index).split('\n').length + 1,
      code: m[2]!.replace(new RegExp(`^${m[1]}`, 'gm'), ''),
    }))
    .filter((s) => !s.code.split('\n').every((l) => l.trim() === '' || /^\s*\d+:/.test(l)));
}

/** `mode: Mode.OBSERVE` in prose: a construct prop with a value (not a shape with `...` or `?`). */
function inlineOf(page: string): Snippet[] {
  const text = readFileSync(join(root, page), 'utf8').replace(/```[^]*?```/g, (b) => b.replace(/[^\n]/g, ' '));
  return [...text.matchAll(/`(\w+): ([^`\n]+)`/g)]
    .filter((m) => m[1]! in propertyCoverage && !/\.\.\.|\?/.test(m[2]!))
    .map((m) => ({
      page,
      line: text.slice(0, m.index).split('\n').length,
      code: `const inline: Partial<GracefulNodeTerminationProps> = { ${m[1]}: ${m[2]} };\nvoid inline;`,
    }));
}

const cdk: Record<string, string> = {
  App: 'App',
  Aspects: 'Aspects',
  Duration: 'Duration',
  RemovalPolicy: 'RemovalPolicy',
  Stack: 'Stack',
  autoscaling: 'aws_autoscaling as autoscaling',
  ec2: 'aws_ec2 as ec2',
  eks: 'aws_eks as eks',
  iam: 'aws_iam as iam',
  logs: 'aws_logs as logs',
  sns: 'aws_sns as sns',
};

/** The package's main as the docs import it: its names, values and types, from the sources. */
async function packageShim(): Promise<{ text: string; names: string[] }> {
  const lines: string[] = [];
  const names: string[] = [];
  for (const [path, exported] of Object.entries(constructExports)) {
    const module = (await import(join(root, path))) as Record<string, unknown>;
    const from = `${toRoot}/${path.replace(/\.ts$/, '.js')}`;
    const values = exported.filter((n) => n in module);
    const types = exported.filter((n) => !(n in module));
    if (values.length > 0) lines.push(`export { ${values.join(', ')} } from '${from}';`);
    if (types.length > 0) lines.push(`export type { ${types.join(', ')} } from '${from}';`);
    names.push(...exported);
  }
  return { text: `${lines.join('\n')}\n`, names };
}

const context = `import type { App, Stack, aws_autoscaling, aws_ec2, aws_eks } from 'aws-cdk-lib';
import type { GracefulNodeTermination } from './package.js';
declare global {
  const app: App;
  const stack: Stack;
  const cluster: aws_eks.Cluster;
  const workers: aws_autoscaling.IAutoScalingGroup;
  const drainer: GracefulNodeTermination;
  const vpc: aws_ec2.IVpc;
  const instanceType: aws_ec2.InstanceType;
  const machineImage: aws_ec2.IMachineImage;
}
export {};
`;

/** A snippet as a module: its imports on top, the rest in a Stack's constructor (`this`). */
function moduleOf(s: Snippet, packageNames: readonly string[]): string {
  const lines = s.code.split('\n');
  const imports = lines
    .filter((l) => l.startsWith('import '))
    .map((l) =>
      l
        .replace(/'cdk-graceful-node-termination'/, "'./package.js'")
        .replace(/'\.\/infra\/([^']+)'/, `'${toRoot}/infra/$1'`),
    );
  const body = lines.filter((l) => !l.startsWith('import '));
  const imported = new Set(
    imports.flatMap((l) => [...(l.match(/\{([^}]*)\}/)?.[1] ?? '').matchAll(/(?:\w+ as )?(\w+)/g)].map((m) => m[1]!)),
  );
  const missing = (names: readonly string[]) => names.filter((n) => !imported.has(n.split(' as ').at(-1)!));
  const fromCdk = missing(Object.keys(cdk)).map((n) => cdk[n]!);
  const fromPackage = missing(packageNames);
  return [
    `// ${s.page}:${s.line}`,
    ...imports,
    `import { Stack as SnippetStack } from 'aws-cdk-lib';`,
    ...(fromCdk.length > 0 ? [`import { ${fromCdk.join(', ')} } from 'aws-cdk-lib';`] : []),
    ...(fromPackage.length > 0 ? [`import { ${fromPackage.join(', ')} } from './package.js';`] : []),
    'export class Snippet extends SnippetStack {',
    '  constructor() {',
    '    super();',
    ...body.map((l) => `    ${l}`),
    '  }',
    '}',
    '',
  ].join('\n');
}

describe('the TypeScript snippets of the docs', { timeout: 120_000 }, () => {
  const snippets = pages.flatMap((page) => [...blocksOf(page), ...inlineOf(page)]);

  it('are found: blocks and inline props', () => {
    expect(snippets.filter((s) => !s.code.startsWith('const inline')).length).toBeGreaterThan(6);
    expect(snippets.some((s) => s.page === join('docs', 'observe-mode.md'))).toBe(true);
  });

  it('compile against the construct and aws-cdk-lib', async () => {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const shim = await packageShim();
    writeFileSync(join(dir, 'package.ts'), shim.text);
    writeFileSync(join(dir, 'context.d.ts'), context);
    const files = snippets.map((s, i) => {
      const file = `snippet-${i}.ts`;
      writeFileSync(join(dir, file), moduleOf(s, shim.names));
      return { file, s };
    });
    writeFileSync(
      join(dir, 'tsconfig.json'),
      // As a CDK app compiles them: strict, but imports as written (no verbatimModuleSyntax).
      JSON.stringify({
        extends: `${toRoot}/tsconfig.json`,
        include: ['*.ts'],
        compilerOptions: { noEmit: true, verbatimModuleSyntax: false },
      }),
    );
    const tsc = join(root, 'node_modules', '.bin', 'tsc');
    const output = await promisify(execFile)(tsc, ['-p', join(dir, 'tsconfig.json')], { cwd: root }).then(
      () => '',
      (error: { stdout?: string }) => error.stdout ?? String(error),
    );
    // Each error said at the page and line of its snippet.
    const errors = output
      .split('\n')
      .filter((l) => l.includes('error TS'))
      .map((l) => {
        const hit = files.find((f) => l.includes(f.file));
        return hit ? `${hit.s.page}:${hit.s.line}: ${l.slice(l.indexOf('error TS'))}` : l;
      });
    expect(errors).toEqual([]);
  });
});
