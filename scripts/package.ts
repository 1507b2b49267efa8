// `npm run package`: builds the construct package (packages/construct) and leaves its npm
// tarball and Python wheel in dist/js and dist/python, and the CLI package (packages/cli)'s
// tarball in dist/cli (docs/packaging.md).
//   1. copy the construct and the modules it shares with the handler into packages/construct/src
//   2. bundle the Lambda into packages/construct/assets/lambda (the asset the construct ships)
//   3. jsii: CommonJS + .d.ts + the .jsii assembly; jsii-docgen: API.md
//   4. jsii-pacmak: the npm tarball and the Python wheel (pacmak builds it in a venv of its own)
//   5. the CLI package (package/cli-package.ts): the one-file bin and the release's template and
//      Lambda zip (when npm run release has written them), packed from a staging copy
// Both packages are built at the build's version (build-version.ts: 0.4.0 on the tag v0.4.0,
// 0.4.0-dev.<commits>+<commit> otherwise).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { bundleLambda } from '../infra/bundling.js';
import { buildVersion } from './build-version.js';
import { packCli } from './package/cli-package.js';
import { construction, withManifests } from './package/manifests.js';
import { constructExports, writeSources } from './package/sources.js';

const root = join(import.meta.dirname, '..');
const packageDir = join(root, 'packages', 'construct');
const dist = join(root, 'dist');
const assetDir = join(packageDir, 'assets', 'lambda');
const bin = (name: string): string => join(root, 'node_modules', '.bin', name);
const started = Date.now();
const { version } = buildVersion(root);
// Child steps (bundle-bin.ts) take the version from here, not from git, which sees the
// construct's package.json changed for the build.
process.env['GNT_BUILD_VERSION'] = version;
console.log(`package: version ${version}`);

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

// The construct's package.json at the build's version (and the repository jsii requires) for the build only.
withManifests([{ file: join(packageDir, 'package.json'), changes: construction(version, process.env) }], () => {
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

  step('the CLI package into dist/cli (bin bundled, with the release files when dist/release has them)', () => {
    const cli = packCli({
      version,
      stage: join(dist, 'stage', 'cli'),
      destination: join(dist, 'cli'),
      releaseDir: join(dist, 'release'),
    });
    if (!cli.withRelease)
      console.log('package: no release files of this version in dist/release: `install` will need --release-dir');
  });
});

const files = (dir: string) => readdirSync(join(dist, dir)).map((name) => join(dist, dir, name));
for (const file of [...files('js'), ...files('python'), ...files('cli')])
  console.log(`package: ${file.slice(root.length + 1)}: ${(sizeOf(file) / 1024).toFixed(0)} KiB`);
console.log(
  `package: the Lambda asset: ${(sizeOf(assetDir) / 1024).toFixed(0)} KiB in ${readdirSync(assetDir).length} files`,
);
console.log(`package: done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
