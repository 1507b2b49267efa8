// `npm run package`: builds the construct package (packages/construct) and leaves its npm
// tarball and Python wheel in dist/js and dist/python, and the CLI package (packages/cli)'s
// tarball in dist/cli (docs/packaging.md).
//   1. copy the construct and the modules it shares with the handler into packages/construct/src
//   2. bundle the Lambda into packages/construct/assets/lambda (the asset the construct ships)
//   3. jsii: CommonJS + .d.ts + the .jsii assembly; jsii-docgen: API.md
//   4. jsii-pacmak: the npm tarball and the Python wheel (pacmak builds it in a venv of its own)
//   5. npm pack of packages/cli (its prepack bundles the one-file bin)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { bundleLambda } from '../infra/bundling.js';
import { constructExports, writeSources } from './package/sources.js';

const root = join(import.meta.dirname, '..');
const packageDir = join(root, 'packages', 'construct');
const dist = join(root, 'dist');
const bin = (name: string): string => join(root, 'node_modules', '.bin', name);
const started = Date.now();

function step(what: string, run: () => void): void {
  const t0 = Date.now();
  run();
  console.log(`package: ${what} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}

function sizeOf(path: string): number {
  const stat = statSync(path);
  return stat.isDirectory() ? readdirSync(path).reduce((n, name) => n + sizeOf(join(path, name)), 0) : stat.size;
}

const run = (command: string, args: string[]): void => {
  execFileSync(command, args, { cwd: packageDir, stdio: 'inherit' });
};

step('sources copied to packages/construct/src', () => {
  const files = writeSources({
    root,
    packageDir,
    entry: 'infra/graceful-node-termination.ts',
    replacements: { 'infra/lambda-code.ts': 'packages/construct/prebuilt/lambda-code.ts' },
    exports: constructExports,
  });
  console.log(`package: ${files.length} files: ${files.join(' ')}`);
});
const assetDir = join(packageDir, 'assets', 'lambda');
step('Lambda bundled into packages/construct/assets/lambda', () => {
  rmSync(join(packageDir, 'assets'), { recursive: true, force: true });
  mkdirSync(assetDir, { recursive: true });
  bundleLambda(assetDir);
});
// jsii-docgen and jsii-pacmak look for the dependencies' assemblies (aws-cdk-lib, constructs)
// in the package's own node_modules: let it be the repository's.
if (!existsSync(join(packageDir, 'node_modules')))
  symlinkSync(join('..', '..', 'node_modules'), join(packageDir, 'node_modules'));
step('jsii', () => run(bin('jsii'), ['--silence-warnings=reserved-word']));
step('jsii-docgen: API.md', () => run(bin('jsii-docgen'), ['--output', 'API.md']));
step('jsii-pacmak: js and python', () => {
  for (const target of ['js', 'python']) rmSync(join(dist, target), { recursive: true, force: true });
  run(bin('jsii-pacmak'), ['--targets', 'js', 'python', '--outdir', dist]);
});

step('npm pack: the CLI package into dist/cli', () => {
  rmSync(join(dist, 'cli'), { recursive: true, force: true });
  mkdirSync(join(dist, 'cli'), { recursive: true });
  execFileSync('npm', ['pack', '--silent', '--pack-destination', join(dist, 'cli')], {
    cwd: join(root, 'packages', 'cli'),
    stdio: ['ignore', 'ignore', 'inherit'],
  });
});

const files = (dir: string) => readdirSync(join(dist, dir)).map((name) => join(dist, dir, name));
for (const file of [...files('js'), ...files('python'), ...files('cli')])
  console.log(`package: ${file.slice(root.length + 1)}: ${(sizeOf(file) / 1024).toFixed(0)} KiB`);
console.log(
  `package: the Lambda asset: ${(sizeOf(assetDir) / 1024).toFixed(0)} KiB in ${readdirSync(assetDir).length} files`,
);
console.log(`package: done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
