// checkov's findings on our templates are fixed or suppressed with a stated reason where checkov
// reads it (Metadata.checkov.skip): the log groups are encrypted with the deployment's key, which
// lets CloudWatch Logs of this account use it; each Lambda check that does not apply to a function
// says why. `npm run lint:template` (scripts/cfn-lint.sh) runs checkov itself; docs/security.md
// lists the reasons for security reviewers.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateRelease } from '../../infra/release.js';
import { expandRelease } from './release-expand.js';
import { exampleStack, resourcesOf, root, type Resources } from './fixtures.js';
import { ofType } from './template-checks.js';

/** The checks a function's Metadata says do not apply, each with its reason. */
const skipsOf = (resource: { Metadata?: Record<string, unknown> }): Record<string, string> =>
  Object.fromEntries(
    ((resource.Metadata?.['checkov'] as { skip?: { id: string; comment: string }[] } | undefined)?.skip ?? []).map(
      (s) => [s.id, s.comment],
    ),
  );

describe('checkov', { timeout: 300_000 }, () => {
  const templates: Record<string, Resources> = {};
  beforeAll(() => {
    templates['the example stack'] = resourcesOf(exampleStack().stack);
    templates['the release template'] = expandRelease(generateRelease('9.9.9').template, {
      ClusterName: 'prod',
      AutoScalingGroupNames: ['workers'],
      LambdaCodeS3Bucket: 'artifacts',
    });
  }, 300_000);

  it.each(['the example stack', 'the release template'])(
    '%s: says for each function why four Lambda checks do not apply',
    (name) => {
      const functions = ofType(templates[name]!, 'AWS::Lambda::Function');
      expect(functions).toHaveLength(2);
      for (const [id, fn] of functions) {
        const skips = skipsOf(fn);
        expect(Object.keys(skips).sort(), id).toEqual(['CKV_AWS_115', 'CKV_AWS_116', 'CKV_AWS_117', 'CKV_AWS_173']);
        for (const comment of Object.values(skips)) expect(comment.length, id).toBeGreaterThan(60);
      }
    },
  );

  it.each(['the example stack', 'the release template'])(
    "%s: encrypts every log group with the deployment's key, which CloudWatch Logs may use for this account's log groups",
    (name) => {
      const resources = templates[name]!;
      const logGroups = ofType(resources, 'AWS::Logs::LogGroup');
      expect(logGroups).toHaveLength(2);
      const [[keyId, key]] = ofType(resources, 'AWS::KMS::Key') as [[string, Resources[string]]];
      for (const [, group] of logGroups) expect(group.Properties['KmsKeyId']).toEqual({ 'Fn::GetAtt': [keyId, 'Arn'] });
      const statements = (
        key.Properties['KeyPolicy'] as { Statement: { Sid?: string; Principal: unknown; Condition: unknown }[] }
      ).Statement;
      const logs = statements.find((s) => s.Sid === 'CloudWatchLogsOfThisAccount')!;
      expect(JSON.stringify(logs.Principal)).toMatch(/logs\.\S+\.amazonaws\.com/);
      expect(JSON.stringify(logs.Condition)).toContain('kms:EncryptionContext:aws:logs:arn');
      expect(JSON.stringify(logs.Condition)).toMatch(/:log-group:\*/);
    },
  );

  it('has its reasons in docs/security.md for reviewers', () => {
    const security = readFileSync(join(root, 'docs', 'security.md'), 'utf8');
    for (const check of ['CKV_AWS_115', 'CKV_AWS_116', 'CKV_AWS_117', 'CKV_AWS_158', 'CKV_AWS_173'])
      expect(security).toContain(check);
  });
});
