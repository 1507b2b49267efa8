// The CLI package (packages/cli) packed as npm packs it (prepack: the single-file bin) and run
// on Node alone: extracted into an empty directory, no node_modules anywhere above it, no tsx;
// installed from the tarball as npx would; and refused on Node 20 in one line.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installedObjects } from '../../../lambda/installer/installed-objects.js';
import { buildVersion } from '../../../scripts/build-version.js';

const root = join(import.meta.dirname, '..', '..', '..');
const cliDir = join(root, 'packages', 'cli');
const bin = 'bin/graceful-node-termination.mjs';
/** The system's Node, older than the bin allows, when the machine has one. */
const oldNode = ['/usr/bin/node', '/usr/local/bin/node'].find(
  (p) =>
    existsSync(p) &&
    Number(execFileSync(p, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }).trim()) < 24,
);

describe('the packed graceful-node-termination CLI', { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'gnt-packed-'));
  const kubeconfig = join(dir, 'kubeconfig');
  let files: string[];
  let tarball: string;
  let binPath: string;
  let closedPort: number;
  const env = {
    PATH: `${dirname(process.execPath)}:${process.env['PATH']}`,
    HOME: dir,
    KUBECONFIG: kubeconfig,
    AWS_REGION: 'eu-west-1',
  };
  const run = (...args: string[]) =>
    spawnSync(process.execPath, [binPath, ...args], { cwd: dir, encoding: 'utf8', env, timeout: 30_000 });

  beforeAll(async () => {
    // prepack (the bin's build) prints its lines before npm's JSON.
    const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], {
      cwd: cliDir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const [packed] = JSON.parse(out.slice(out.indexOf('[\n'))) as [{ filename: string; files: { path: string }[] }];
    files = packed.files.map((f) => f.path).sort();
    tarball = join(dir, packed.filename);
    execFileSync('tar', ['-xzf', tarball, '-C', dir]);
    binPath = join(dir, 'package', bin);
    // A cluster nobody serves: a port just closed (fetch refuses the well-known ones as bad ports).
    const probe = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => probe.once('listening', resolve));
    closedPort = (probe.address() as { port: number }).port;
    await new Promise((resolve) => probe.close(resolve));
    writeFileSync(
      kubeconfig,
      `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:${closedPort}"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: prod, context: {cluster: c, user: u}}]\ncurrent-context: prod\n`,
    );
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('holds the bin, the package.json, the README and the licence, nothing else, and no dependency', () => {
    expect(files).toEqual(['LICENSE', 'README.md', 'bin/cli.mjs', bin, 'package.json']);
    const manifest = JSON.parse(readFileSync(join(dir, 'package', 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest['bin']).toEqual({ 'graceful-node-termination': bin });
    expect(manifest['dependencies']).toBeUndefined();
    expect(existsSync(join(dir, 'node_modules'))).toBe(false);
    expect(readFileSync(join(dir, 'package', 'bin', 'cli.mjs'), 'utf8')).not.toMatch(/["']tsx(\/[^"']*)?["']/);
  });

  it('says its version, prints its usage for --help (0) and refuses a missing or unknown command (2)', () => {
    const version = run('--version');
    expect(version.status, version.stderr).toBe(0);
    // The build's version: 0.4.0 only on the tag v0.4.0; from main it names the commit.
    const { version: expected } = buildVersion(root);
    expect(version.stdout.trim()).toBe(`graceful-node-termination ${expected} (node ${process.versions.node})`);
    const head = execFileSync('git', ['rev-parse', '--short=7', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    if (!execFileSync('git', ['tag', '--points-at', 'HEAD'], { cwd: root, encoding: 'utf8' }).includes('v')) {
      expect(version.stdout).toContain('-dev.');
      expect(version.stdout).toContain(`+${head}`);
    }
    expect(run('--help').stdout).toContain('usage: graceful-node-termination <command>');
    expect(run().status).toBe(2);
    const unknown = run('drain');
    expect(unknown.status).toBe(2);
    expect(unknown.stderr.trim()).toBe(
      'unknown command "drain"; commands: check, upgrade, cleanup, migrate, termination-policy, install, uninstall, rbac (graceful-node-termination --help)',
    );
  });

  it.each(['check', 'upgrade'])('prints the usage of %s for --help and exits 0', (command) => {
    const help = run(command, '--help');
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toContain(`usage: graceful-node-termination ${command} <auto-scaling-group>`);
  });

  it("prints a deployment's RBAC for an aws-auth cluster with nothing but Node (no clone, no AWS, no cluster)", () => {
    const rbac = run('rbac', '--deployment', 'gnt-prod', '--deadline-policy', 'retain');
    expect(rbac.status, rbac.stderr).toBe(0);
    expect(loadAll(rbac.stdout)).toEqual(installedObjects('gnt-prod', 'retain', 'gnt-prod', { surge: false }));
    expect(run('rbac', '--help').stdout).toContain('usage: graceful-node-termination rbac --deployment NAME');
  });

  it.each([
    ['install', 'usage: graceful-node-termination install --bucket B (--group G ... | --eksctl-cluster C)'],
    ['uninstall', 'usage: graceful-node-termination uninstall (--cluster C | --stack-name S)'],
  ])('prints the usage of %s for --help and exits 0', (command, usage) => {
    const help = run(command, '--help');
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toContain(usage);
  });

  it('refuses install without a bucket, and one without its release files, in one line each (exit 2)', () => {
    const noBucket = run('install', '--group', 'g', '--cluster', 'c');
    expect(noBucket.status).toBe(2);
    expect(noBucket.stderr).toBe(
      'install: name the S3 bucket for the template and the Lambda zip with --bucket (see install --help)\n',
    );
    // The packed tarball was built by npm pack alone: no release files beside the bin.
    const noRelease = run('install', '--bucket', 'b', '--group', 'g', '--cluster', 'c', '--release-dir', dir);
    expect(noRelease.status).toBe(2);
    expect(noRelease.stderr).toMatch(/^install: .* must hold one release .* it holds 0 template\(s\) and 0 zip\(s\)/);
  });

  it('refuses an unknown option and a bad value with exit 2, naming the valid ones', () => {
    const option = run('check', '--bogus', 'g');
    expect(option.status).toBe(2);
    expect(option.stderr).toMatch(/^check: unknown option '--bogus'; valid options: .*-o\/--output.*--kubeconfig.*\n$/);
    const format = run('check', '-o', 'xml', 'g');
    expect(format.status).toBe(2);
    expect(format.stderr).toBe('check: -o/--output "xml" is not valid; use one of: table, json, yaml\n');
  });

  it('runs check with everything it needs bundled: against no cluster it fails in one line naming the server and the context', () => {
    const check = run('check', '--nodes', 'node-a');
    expect(check.status).toBe(1);
    expect(check.stderr).toBe(
      `check: cannot reach the Kubernetes API at https://127.0.0.1:${closedPort} (context prod): connect ECONNREFUSED 127.0.0.1:${closedPort}; check the kubeconfig (--kubeconfig, --context) and the network\n`,
    );
  });

  it('installs from the tarball with no dependency and runs as the installed command', () => {
    const app = join(dir, 'app');
    execFileSync('npm', ['init', '-y'], {
      cwd: dir,
      stdio: 'ignore',
      env: { ...process.env, npm_config_init_module: join(dir, 'none') },
    });
    execFileSync('mkdir', ['-p', app]);
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--prefix', app, tarball], {
      stdio: 'ignore',
    });
    expect(readFileSync(join(app, 'package-lock.json'), 'utf8').match(/"node_modules\//g)).toHaveLength(1);
    const installed = spawnSync(join(app, 'node_modules', '.bin', 'graceful-node-termination'), ['--version'], {
      encoding: 'utf8',
      env,
    });
    expect(installed.status, installed.stderr).toBe(0);
    expect(installed.stdout).toMatch(/^graceful-node-termination \d+\.\d+\.\d+/);
  });

  it.skipIf(oldNode === undefined)(
    'is refused on an older Node in one line naming the version needed and the one found',
    () => {
      const old = spawnSync(oldNode!, [binPath, 'check', '--help'], { encoding: 'utf8', env });
      expect(old.status).toBe(1);
      expect(old.stdout).toBe('');
      expect(old.stderr).toMatch(
        /^graceful-node-termination needs Node\.js 24 or later; this is Node\.js 2\d\.\d+\.\d+ \(.*node\)\n$/,
      );
    },
  );
});
