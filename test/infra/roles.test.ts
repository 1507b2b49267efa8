// Accounts that require a permissions boundary or a path on every role: the construct sets
// both on every role it creates, its parts' roles included.
import { aws_iam as iam } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { ofType } from './template-checks.js';
import { resourcesOf, stackWith } from './fixtures.js';

const boundaryArn = 'arn:aws:iam::123456789012:policy/boundary';

// The first synthesis in a worker bundles the Lambda (esbuild).
describe('the roles', { timeout: 120_000 }, () => {
  it('carry the permissions boundary and the path on every role, the RBAC installer and hook roles included', () => {
    const { stack } = stackWith({
      rolePath: '/platform/drain/',
      setup: (s) => ({ permissionsBoundary: iam.ManagedPolicy.fromManagedPolicyArn(s, 'Boundary', boundaryArn) }),
    });
    const roles = ofType(resourcesOf(stack), 'AWS::IAM::Role');
    expect(roles).toHaveLength(3);
    for (const [, role] of roles)
      expect(role.Properties).toMatchObject({ PermissionsBoundary: boundaryArn, Path: '/platform/drain/' });
  });

  it('have neither by default', () => {
    for (const [, role] of ofType(resourcesOf(stackWith({}).stack), 'AWS::IAM::Role')) {
      expect(role.Properties['PermissionsBoundary']).toBeUndefined();
      expect(role.Properties['Path']).toBeUndefined();
    }
  });

  it('refuse a path IAM would refuse, naming the rule', () => {
    for (const path of ['platform', '/platform', 'platform/', `/${'a'.repeat(511)}/`]) {
      expect(() => stackWith({ rolePath: path }), path).toThrow(
        /rolePath .* is invalid: IAM paths are "\/" or start and end with "\/"/,
      );
    }
  });
});
