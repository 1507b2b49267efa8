// docs/architecture.md against the code: the file map is the one the head comments give (every file named, none
// that is gone), and the worked example's list of what a new draining trigger touches names files and names that
// are where it says.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { firstSentence, headComment, withFileMap } from '../../../scripts/architecture-map.js';

const root = join(import.meta.dirname, '..', '..', '..');
const page = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8');

describe('the file map', () => {
  it('is the one the files’ head comments give now (npm run docs writes it)', () => {
    expect(withFileMap(page)).toBe(page);
  });

  it('takes the first sentence of a head comment, links left out', () => {
    const head = headComment('// Evicts the pods, e.g. these. Then waits.\n// https://example.org/x\nimport x;\n');
    expect(head).toBe('Evicts the pods, e.g. these. Then waits.');
    expect(firstSentence(head!)).toBe('Evicts the pods, e.g. these.');
    expect(headComment('import x;\n')).toBeUndefined();
  });

  it('refuses a page without its block rather than losing the map', () => {
    expect(() => withFileMap('# Architecture\n', '')).toThrow(/file-map:start/);
  });
});

describe('the worked example', () => {
  const block = page.slice(page.indexOf('<!-- worked-example:start -->'), page.indexOf('<!-- worked-example:end -->'));
  const rows = block
    .split('\n')
    .filter((l) => l.startsWith('| ') && !l.startsWith('| change') && !l.startsWith('|---'))
    .map((l) => l.split('|').map((c) => c.trim()))
    .map(([, change, files, what]) => ({
      change: change!,
      files: [...files!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!),
      names: [...what!.matchAll(/`([A-Za-z][\w.]*)/g)].map((m) => m[1]!),
    }));

  it('lists the trigger, its route, its source member and case, the record and the rule', () => {
    expect(rows.map((r) => r.change)).toEqual([
      'new',
      'one line',
      'one member',
      'one case',
      'one case',
      'one rule',
      'tests',
    ]);
  });

  it('names files that exist, each holding the first name the row gives it', () => {
    for (const row of rows.filter((r) => r.change !== 'new')) {
      for (const file of row.files) expect(existsSync(join(root, file)), file).toBe(true);
      const [file] = row.files;
      const [name] = row.names;
      if (file === undefined || name === undefined || file.endsWith('/')) continue;
      const word = name.split(/[.(]/)[0]!;
      expect(readFileSync(join(root, file), 'utf8'), `${file} should hold ${word}`).toMatch(
        new RegExp(`\\b${word}\\b`),
      );
    }
  });

  it('is a sketch: the new trigger is not built yet (when it is, this page says what it took)', () => {
    const [created] = rows.filter((r) => r.change === 'new').flatMap((r) => r.files);
    expect(created).toBeDefined();
    expect(existsSync(join(root, created!))).toBe(false);
  });
});
