// The mutation check CI runs (scripts/mutation-ci.ts): the floor it reads from the CI config, and the score it
// computes from Stryker's report, as Stryker computes it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { floorIn, mutationScore } from '../../../scripts/mutation-ci.js';

const root = join(import.meta.dirname, '..', '..', '..');

describe('the mutation check', () => {
  it('reads the floor the CI config declares', () => {
    expect(floorIn('export const floor = 81.5;')).toBe(81.5);
    expect(floorIn('export const floor = 80;')).toBe(80);
    expect(floorIn('const floor = 80;')).toBeUndefined();
    const floor = floorIn(readFileSync(join(root, 'stryker.ci.config.mjs'), 'utf8'));
    expect(floor).toBeGreaterThan(0);
    expect(floor).toBeLessThanOrEqual(100);
  });

  it("scores killed and timed-out mutants among the valid ones, as Stryker's mutationScore", () => {
    const report = {
      files: {
        'a.ts': { mutants: [{ status: 'Killed' }, { status: 'Survived' }, { status: 'Timeout' }] },
        'b.ts': { mutants: [{ status: 'NoCoverage' }, { status: 'CompileError' }, { status: 'Ignored' }] },
      },
    };
    expect(mutationScore(report)).toEqual({
      score: 50,
      counts: { Killed: 1, Survived: 1, Timeout: 1, NoCoverage: 1, CompileError: 1, Ignored: 1 },
    });
    expect(mutationScore({ files: {} }).score).toBe(0);
  });

  it('CI runs it as the README lists it', () => {
    const lines = (file: string) => readFileSync(join(root, file), 'utf8').split('\n');
    expect(lines('.ci/run')).toContain('npm run mutation:ci');
    expect(lines('README.md').some((line) => line.split('#')[0]!.trim() === 'npm run mutation:ci')).toBe(true);
    expect(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts['mutation:ci']).toMatch(
      /tsx scripts\/mutation-ci\.ts$/,
    );
  });
});
