// A release you can pin: the version a build says it is (build-version.ts), the checksum list
// and SBOM identity of `npm run release` (release-artifacts.ts), the Terraform module archive,
// and the packages' metadata (a licence in each, no invented field).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildVersion, urlSafe, versionOf } from '../../../scripts/build-version.js';
import { construction } from '../../../scripts/package/manifests.js';
import { checksums, cycloneDx, terraformArchive } from '../../../scripts/release-artifacts.js';

const root = join(import.meta.dirname, '..', '..', '..');
const json = (file: string) => JSON.parse(readFileSync(join(root, file), 'utf8')) as Record<string, unknown>;
const work = mkdtempSync(join(tmpdir(), 'gnt-release-test-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the build version', () => {
  const git = { commit: 'abc1234', commits: 312, tags: [] as string[], dirty: false };

  it('is the base version only on a clean commit tagged v<base>', () => {
    expect(versionOf('0.4.0', { ...git, tags: ['v0.4.0'] })).toEqual({
      version: '0.4.0',
      base: '0.4.0',
      commit: 'abc1234',
      release: true,
    });
  });

  it('names the commit otherwise: untagged, tagged for another version, or changed since', () => {
    expect(versionOf('0.4.0', git).version).toBe('0.4.0-dev.312+abc1234');
    expect(versionOf('0.4.0', { ...git, tags: ['v0.3.0'] }).version).toBe('0.4.0-dev.312+abc1234');
    expect(versionOf('0.4.0', { ...git, tags: ['v0.4.0'], dirty: true })).toMatchObject({
      version: '0.4.0-dev.312+abc1234.dirty',
      release: false,
    });
    expect(versionOf('0.4.0', undefined).version).toBe('0.4.0-dev.0+unknown');
  });

  it('refuses a base that is not MAJOR.MINOR.PATCH', () => {
    expect(() => versionOf('0.4.0-rc.1', git)).toThrow(/must be MAJOR\.MINOR\.PATCH/);
  });

  it('of this clone is 0.4.0 with the commit git names, or the one a parent step passes down', () => {
    const head = execFileSync('git', ['rev-parse', '--short=7', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    const here = buildVersion(root, {});
    expect(here.base).toBe('0.4.0');
    expect(here.commit).toBe(head);
    expect(here.version).toMatch(new RegExp(`^0\\.4\\.0(-dev\\.\\d+\\+${head}(\\.dirty)?)?$`));
    expect(buildVersion(root, { GNT_BUILD_VERSION: '0.4.0-dev.9+0123abc' })).toEqual({
      version: '0.4.0-dev.9+0123abc',
      base: '0.4.0',
      commit: '0123abc',
      release: false,
    });
    expect(() => buildVersion(root, { GNT_BUILD_VERSION: '9.9.9' })).toThrow(
      /not a build of package.json's version 0.4.0/,
    );
  });

  it('is written into a URL path with + as %2B (S3 reads a bare + as a space)', () => {
    expect(urlSafe('graceful-node-termination-0.4.0-dev.3+abc.template.json')).toBe(
      'graceful-node-termination-0.4.0-dev.3%2Babc.template.json',
    );
  });
});

describe('the release artifacts', () => {
  it('lists every file with its SHA-256 as sha256sum -c reads it', () => {
    const dir = join(work, 'sums');
    mkdirSync(dir);
    writeFileSync(join(dir, 'b.zip'), 'bytes');
    writeFileSync(join(dir, 'a.json'), '{}\n');
    writeFileSync(join(dir, 'SHA256SUMS'), 'stale');
    const sums = checksums(dir);
    expect(
      sums
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('  ')[1]),
    ).toEqual(['a.json', 'b.zip']);
    writeFileSync(join(dir, 'SHA256SUMS'), sums);
    expect(execFileSync('sha256sum', ['-c', 'SHA256SUMS'], { cwd: dir, encoding: 'utf8' })).toBe(
      'a.json: OK\nb.zip: OK\n',
    );
    writeFileSync(join(dir, 'b.zip'), 'other bytes');
    expect(() => execFileSync('sha256sum', ['--quiet', '-c', 'SHA256SUMS'], { cwd: dir, stdio: 'pipe' })).toThrow();
  });

  it("gives npm sbom's CycloneDX document the release's name and version, and refuses anything else", () => {
    const raw = JSON.stringify({
      bomFormat: 'CycloneDX',
      specVersion: '1.5',
      metadata: { component: { name: 'wt-release', version: '0.4.0', 'bom-ref': 'x' } },
      components: [{ name: '@aws-sdk/client-auto-scaling' }],
    });
    const bom = cycloneDx(raw, '0.4.0-dev.1+abc');
    expect(bom.metadata.component).toEqual({
      name: 'graceful-node-termination',
      version: '0.4.0-dev.1+abc',
      'bom-ref': 'x',
    });
    expect(bom['components']).toHaveLength(1);
    expect(() => cycloneDx('{"spdxVersion":"SPDX-2.3"}', '1')).toThrow(/CycloneDX/);
  });

  it('archives the Terraform module with the licence and the release files, without local state, the same bytes every time', () => {
    const module = join(work, 'terraform');
    mkdirSync(join(module, 'examples', 'x', '.terraform'), { recursive: true });
    writeFileSync(join(module, 'main.tf'), 'locals {}\n');
    writeFileSync(join(module, 'examples', 'x', 'main.tf'), 'module "m" {}\n');
    writeFileSync(join(module, 'examples', 'x', '.terraform', 'junk'), 'x');
    writeFileSync(join(module, 'examples', 'x', 'terraform.tfstate'), '{}');
    writeFileSync(join(work, 'LICENSE'), 'Apache');
    const template = join(work, 'graceful-node-termination-1.template.json');
    writeFileSync(template, '{}');
    const zip = terraformArchive(module, [template]);
    expect(terraformArchive(module, [template]).equals(zip)).toBe(true);
    const file = join(work, 'module.zip');
    writeFileSync(file, zip);
    const listed = execFileSync(
      'python3',
      ['-c', 'import sys,zipfile;print("\\n".join(sorted(zipfile.ZipFile(sys.argv[1]).namelist())))', file],
      {
        encoding: 'utf8',
      },
    );
    expect(listed.trim().split('\n')).toEqual([
      'LICENSE',
      'examples/x/main.tf',
      'main.tf',
      'release/graceful-node-termination-1.template.json',
    ]);
  });
});

describe('the packages', () => {
  const license = readFileSync(join(root, 'LICENSE'), 'utf8');

  it('each carry the Apache-2.0 licence and the repository version, and none invents a URL', () => {
    expect(license).toContain('Apache License\n                           Version 2.0, January 2004');
    for (const dir of ['packages/construct', 'packages/cli']) {
      expect(readFileSync(join(root, dir, 'LICENSE'), 'utf8'), dir).toBe(license);
      const manifest = json(`${dir}/package.json`);
      expect(manifest['version'], dir).toBe(json('package.json')['version']);
      expect(manifest['license']).toBe('Apache-2.0');
      expect(JSON.stringify(manifest), dir).not.toMatch(/example\.(com|org)|https?:\/\//);
    }
  });

  it('gives jsii the repository it requires from GNT_REPOSITORY_URL, or says the build is unpublished', () => {
    expect(construction('0.4.0-dev.1+abc', {})).toEqual({
      version: '0.4.0-dev.1+abc',
      repository: { type: 'git', url: 'unpublished', directory: 'packages/construct' },
    });
    expect(construction('0.4.0', { GNT_REPOSITORY_URL: 'https://git.internal/gnt.git' })['repository']).toMatchObject({
      url: 'https://git.internal/gnt.git',
    });
  });

  it('READMEs link only to what ships beside them, so they hold outside the repository', () => {
    for (const dir of ['packages/construct', 'packages/cli']) {
      const readme = readFileSync(join(root, dir, 'README.md'), 'utf8');
      const shipped = readdirSync(join(root, dir));
      for (const [, target] of readme.matchAll(/\]\(([^)]+)\)/g))
        expect(shipped, `${dir}/README.md links to ${target}`).toContain(target!.split('#')[0]);
      expect(readme).not.toMatch(/example\.(com|org)/);
    }
  });
});
