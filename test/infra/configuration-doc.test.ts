// docs/configuration.md says "every construct property": its table must name each one the
// construct has (propertyCoverage's keys are exactly the props, release.test.ts checks), and no
// other, but for the methods that add groups.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { propertyCoverage } from '../../infra/release-coverage.js';
import { root } from './fixtures.js';

const methods = ['addAutoScalingGroup', 'addAutoScalingGroupName'];

describe('docs/configuration.md', () => {
  it('has a row for every construct property, and for nothing else', () => {
    const page = readFileSync(join(root, 'docs', 'configuration.md'), 'utf8');
    const section = page.slice(
      page.indexOf('## Construct properties'),
      page.indexOf('\n## ', page.indexOf('## Construct properties') + 1),
    );
    const named = section
      .split('\n')
      .filter((line) => line.startsWith('| `'))
      .flatMap((line) => [...line.split('|')[1]!.matchAll(/`(\w+)/g)].map((m) => m[1]!));
    expect(new Set(named).size, 'a property named twice').toBe(named.length);
    expect(named.filter((n) => !methods.includes(n)).sort()).toEqual(Object.keys(propertyCoverage).sort());
  });
});
