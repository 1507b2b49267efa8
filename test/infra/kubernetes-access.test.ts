// The RBAC installer holds cluster admin only while it acts: no access policy on its entry,
// and IAM rights to associate exactly that policy with exactly its own entry.
import { Fn, Stack } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { grantsOf, resourceNamed, resourcesOf, stackWith, statements, synthWithNag } from './fixtures.js';

const clusterAdmin = {
  'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy']],
};

/** `arn:<partition>:eks:<region>:<account>:access-entry/<cluster>/role/<account>/<role name>/*` */
function ownAccessEntry(cluster: unknown, roleId: string) {
  return {
    'Fn::Join': [
      '',
      [
        'arn:',
        { Ref: 'AWS::Partition' },
        ':eks:',
        { Ref: 'AWS::Region' },
        ':',
        { Ref: 'AWS::AccountId' },
        `:access-entry/${cluster}/role/`,
        { Ref: 'AWS::AccountId' },
        '/',
        { Ref: roleId },
        '/*',
      ],
    ],
  };
}

// The first synthesis in a worker bundles the Lambda (esbuild): give it room under load.
describe('the Kubernetes access', { timeout: 120_000 }, () => {
  it('lets the installer associate only AmazonEKSClusterAdminPolicy, cluster-wide, with its own entry, and disassociate it', () => {
    const resources = resourcesOf(stackWith({}).stack);
    const [roleId] = resourceNamed(resources, /^GntRbacInstallerRole[0-9A-F]{8}$/);
    const [, policy] = resourceNamed(resources, 'GntRbacInstallerRoleDefaultPolicy');
    expect(policy.Properties['Roles']).toEqual([{ Ref: roleId }]);
    expect(grantsOf(resources, 'eks:AssociateAccessPolicy')).toEqual([
      {
        Action: 'eks:AssociateAccessPolicy',
        Effect: 'Allow',
        Resource: ownAccessEntry('prod', roleId),
        Condition: { ArnEquals: { 'eks:policyArn': clusterAdmin }, StringEquals: { 'eks:accessScope': 'cluster' } },
      },
    ]);
    expect(grantsOf(resources, 'eks:DisassociateAccessPolicy')).toEqual([
      {
        Action: 'eks:DisassociateAccessPolicy',
        Effect: 'Allow',
        Resource: ownAccessEntry('prod', roleId),
        Condition: { ArnEquals: { 'eks:policyArn': clusterAdmin } },
      },
    ]);
    // Nothing else of EKS but reading the cluster, and the drainer none of the association rights.
    expect(
      new Set(
        statements(resources)
          .flatMap((s) => [s.Action].flat())
          .filter((a) => a.startsWith('eks:')),
      ),
    ).toEqual(new Set(['eks:DescribeCluster', 'eks:AssociateAccessPolicy', 'eks:DisassociateAccessPolicy']));
    const [, drainerPolicy] = resourceNamed(resources, 'GntRoleDefaultPolicy');
    expect(JSON.stringify(drainerPolicy)).not.toContain('AccessPolicy');
  });

  it('acknowledges the "*" in its own entry\'s ARN (the id EKS generates) and nothing broader, also for a cluster name given as a token', () => {
    const literal = stackWith({});
    expect(() => synthWithNag(literal.app)).not.toThrow();
    const token = stackWith({ setup: (s: Stack) => ({ clusterName: Fn.importValue(`${s.stackName}-cluster`) }) });
    expect(() => synthWithNag(token.app)).not.toThrow();
    const resources = resourcesOf(token.stack);
    const [roleId] = resourceNamed(resources, /^GntRbacInstallerRole[0-9A-F]{8}$/);
    expect(JSON.stringify(grantsOf(resources, 'eks:AssociateAccessPolicy')[0]!.Resource)).toContain(
      JSON.stringify({ Ref: roleId }),
    );
    expect(JSON.stringify(grantsOf(resources, 'eks:AssociateAccessPolicy')[0]!.Resource)).toContain(
      JSON.stringify({ 'Fn::ImportValue': 'Test-cluster' }),
    );
  });
});
