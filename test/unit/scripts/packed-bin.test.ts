// The operator CLI from the packed tarball (npm pack runs prepack: the single-file bin), on Node
// alone: extracted into an empty directory, no node_modules anywhere above it, no tsx.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..', '..');
const bin = 'graceful-node-termination.mjs';

describe('the packed graceful-node-termination command', { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'gnt-packed-'));
  let files: string[];
  let binPath: string;
  const run = (...args: string[]) =>
    spawnSync(process.execPath, [binPath, ...args], {
      cwd: dir,
      encoding: 'utf8',
      env: { PATH: process.env['PATH'], HOME: dir, KUBECONFIG: join(dir, 'no-kubeconfig'), AWS_REGION: 'eu-west-1' },
      timeout: 30_000,
    });

  beforeAll(() => {
    // prepack (the bin's build) prints its line before npm's JSON.
    const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const [packed] = JSON.parse(out.slice(out.indexOf('[\n'))) as [{ filename: string; files: { path: string }[] }];
    files = packed.files.map((f) => f.path).sort();
    execFileSync('tar', ['-xzf', join(dir, packed.filename), '-C', dir]);
    binPath = join(dir, 'package', 'dist', 'bin', bin);
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('holds the bin, the package.json and the README, nothing else', () => {
    expect(files).toEqual(['README.md', `dist/bin/${bin}`, 'package.json']);
    const manifest = JSON.parse(readFileSync(join(dir, 'package', 'package.json'), 'utf8')) as { bin: Record<string, string> };
    expect(manifest.bin).toEqual({ 'graceful-node-termination': `dist/bin/${bin}` });
    expect(existsSync(join(dir, 'node_modules'))).toBe(false);
    expect(readFileSync(binPath, 'utf8')).not.toMatch(/["']tsx(\/[^"']*)?["']/);
  });

  it('prints its usage and exits 0 for --help, and 2 without a command', () => {
    const help = run('--help');
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toContain('usage: graceful-node-termination <command>');
    expect(run().status).toBe(2);
    expect(run('drain').status).toBe(2);
  });

  it.each(['check', 'upgrade'])('prints the usage of %s for --help and exits 0', (command) => {
    const help = run(command, '--help');
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toContain(`usage: graceful-node-termination ${command} <auto-scaling-group>`);
  });

  it('runs check with everything it needs bundled: it fails only on the cluster it cannot reach', () => {
    const check = run('check', '--nodes', 'node-a');
    expect(check.status).toBe(1);
    expect(check.stderr).toMatch(/^check failed: /m);
    expect(check.stderr).not.toMatch(/ERR_MODULE_NOT_FOUND|Cannot find (module|package)/);
  });
});
