// Every npm script of the repository refuses a Node older than package.json's engines in one
// line (scripts/require-node.mjs, its first step), instead of crashing halfway with a TypeError:
// after `npm ci --ignore-scripts` the `node` devDependency has not installed Node 24, and the
// scripts run on the machine's own Node.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { requiredNodeMajor } from '../../../scripts/bundle-bin.js';

const root = join(import.meta.dirname, '..', '..', '..');
const guard = join(root, 'scripts', 'require-node.mjs');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  engines: { node: string };
  scripts: Record<string, string>;
};

/** The guard on this Node, told it is another version (process.versions is what it reads). */
function guardOn(version: string) {
  const fake = `Object.defineProperty(process, 'versions', { value: { ...process.versions, node: '${version}' } });`;
  return spawnSync(process.execPath, ['--input-type=module', '-e', `${fake} await import(${JSON.stringify(guard)});`], {
    cwd: root,
    encoding: 'utf8',
  });
}

describe('the Node every npm script runs on', () => {
  it('is checked first by every script', () => {
    const unguarded = Object.entries(manifest.scripts).filter(
      ([, command]) => !command.startsWith('node scripts/require-node.mjs && '),
    );
    expect(unguarded).toEqual([]);
  });

  it('older than engines: refused in one line naming the version needed, the one found and the way out', () => {
    const old = guardOn('20.20.2');
    expect(old.status).toBe(1);
    expect(old.stdout).toBe('');
    expect(old.stderr).toBe(
      'graceful-node-termination needs Node.js 24 or later; this script runs on Node.js 20.20.2 ' +
        `(${process.execPath}): \`npm rebuild node\` installs Node 24 in node_modules ` +
        '(the step --ignore-scripts skipped), or `nvm use` (.nvmrc)\n',
    );
    expect(guardOn('23.11.1').status).toBe(1);
  });

  it('24 or later: says nothing and lets the script run', () => {
    for (const version of [process.versions.node, '24.0.0', '26.1.0']) {
      const ok = guardOn(version);
      expect(ok.status, ok.stderr).toBe(0);
      expect(ok.stdout + ok.stderr).toBe('');
    }
  });

  it('agrees with .nvmrc and with the installed CLI’s own guard', () => {
    expect(manifest.engines.node).toBe(`>=${requiredNodeMajor}`);
    expect(readFileSync(join(root, '.nvmrc'), 'utf8').trim()).toBe(String(requiredNodeMajor));
  });
});
