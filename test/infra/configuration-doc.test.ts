// The pages that say "every": docs/configuration.md's construct properties (propertyCoverage's
// keys are exactly the props, release.test.ts checks), and the stack's outputs in docs/deploy.md
// and docs/cloudformation.md.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { propertyCoverage } from '../../infra/release-coverage.js';
import { exampleStack, root } from './fixtures.js';
import { Template } from 'aws-cdk-lib/assertions';

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

  it('lists every output of the stack in docs/deploy.md and docs/cloudformation.md, and no other', () => {
    const outputs = Object.keys(Template.fromStack(exampleStack().stack).toJSON()['Outputs'] as object).sort();
    expect(outputs).toHaveLength(5);
    const page = (name: string) => readFileSync(join(root, 'docs', name), 'utf8');
    const deploy = page('deploy.md');
    const table = deploy.slice(deploy.indexOf('| Output |'), deploy.indexOf('\n\n', deploy.indexOf('| Output |')));
    expect([...table.matchAll(/^\| `(\w+)` \|/gm)].map((m) => m[1]).sort()).toEqual(outputs);
    const cloudformation = page('cloudformation.md');
    const line = cloudformation.slice(cloudformation.indexOf('Outputs, as in the CDK stack'));
    const paragraph = line.slice(0, line.indexOf('\n\n'));
    expect([...paragraph.matchAll(/`(\w+)`/g)].map((m) => m[1]).sort()).toEqual(outputs);
  });
});
