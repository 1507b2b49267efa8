// The CLI package (packages/cli) as `npm run package` packs it: the one-file bin at the build's
// version, and beside it the release's template and Lambda zip (release/), which `install`
// deploys, so the command and what it installs are one version. Packed from a staging copy so
// the committed packages/cli keeps its base version and no build output.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleBin, cliPackageDir } from '../bundle-bin.js';

/** The release files of exactly this version in `releaseDir` (npm run release writes them first), or none. */
export function releaseFilesOf(releaseDir: string, version: string): string[] {
  if (!existsSync(releaseDir)) return [];
  const prefix = `graceful-node-termination-${version}`;
  return readdirSync(releaseDir).filter(
    (n) => n === `${prefix}.template.json` || (n.startsWith(`${prefix}-lambda-`) && n.endsWith('.zip')),
  );
}

/** Packs the CLI into `destination`; returns the tarball's path and whether it carries the release. */
export function packCli(o: { version: string; stage: string; destination: string; releaseDir: string }): {
  tarball: string;
  withRelease: boolean;
} {
  bundleBin();
  rmSync(o.stage, { recursive: true, force: true });
  mkdirSync(o.stage, { recursive: true });
  for (const name of ['README.md', 'LICENSE', 'bin'])
    cpSync(join(cliPackageDir, name), join(o.stage, name), { recursive: true });
  const manifest = JSON.parse(readFileSync(join(cliPackageDir, 'package.json'), 'utf8')) as Record<string, unknown>;
  // The bin is built above: the staged package has no prepack to run.
  const { scripts: _, ...rest } = manifest;
  writeFileSync(join(o.stage, 'package.json'), `${JSON.stringify({ ...rest, version: o.version }, null, 2)}\n`);
  const release = releaseFilesOf(o.releaseDir, o.version);
  for (const name of release) cpSync(join(o.releaseDir, name), join(o.stage, 'release', name));
  rmSync(o.destination, { recursive: true, force: true });
  mkdirSync(o.destination, { recursive: true });
  const name = execFileSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', o.destination], {
    cwd: o.stage,
    encoding: 'utf8',
  }).trim();
  return { tarball: join(o.destination, name), withRelease: release.length === 2 };
}
