// The drainer's way into the cluster: its access entry, and the RBAC installer (a custom
// resource with its own function, role and access entry) that applies the ClusterRole,
// ClusterRoleBinding and flow control objects the entry's group is bound by.
import { createHash } from 'node:crypto';
import {
  CfnElement,
  CustomResource,
  Duration,
  Stack,
  aws_eks as eks,
  aws_iam as iam,
  aws_kms as kms,
  aws_lambda as lambda,
  aws_logs as logs,
  type RemovalPolicy,
} from 'aws-cdk-lib';
import { Construct } from 'constructs';
import type { DeadlinePolicy } from '../lambda/shared/config.js';
import { renderRbacYaml, renderSurgeYaml } from '../lambda/installer/rbac-yaml.js';
import { lambdaHandlers } from './handlers.js';
import { grantLogs, grantVpcAccess } from './drainer.js';
import { keepParentLogicalIds, stableLogicalId } from './logical-ids.js';
import { acknowledgeNag, checkovLambdaReasons, flattenForNag, skipCheckov } from './nag.js';
import type { VpcPlacement } from './settings.js';

export interface KubernetesAccessProps {
  readonly clusterName: string;
  readonly clusterArn: string;
  /** Names the RBAC objects. */
  readonly deploymentName: string;
  /** The group the drainer's entry maps to and the ClusterRoleBinding binds. */
  readonly kubernetesGroup: string;
  /** Decides whether the ClusterRole may delete pods (only FORCE does). */
  readonly deadlinePolicy: DeadlinePolicy;
  readonly drainerRole: iam.IRole;
  readonly code: lambda.Code;
  /** Encrypts the installer's log group. */
  readonly key: kms.IKey;
  readonly logRetention: logs.RetentionDays;
  readonly removalPolicy: RemovalPolicy;
  readonly vpcPlacement: VpcPlacement;
  /** Surge before evict: patch on Deployments and the admission policy that fences it. */
  readonly surge?: boolean;
}

export class KubernetesAccess extends Construct {
  /** The drainer's STANDARD entry: only the installed ClusterRole gives its group any right. */
  readonly drainerEntry: eks.CfnAccessEntry;
  /** The installed RBAC: applied on create and update, removed on delete. */
  readonly rbac: CustomResource;
  readonly installerRole: iam.Role;

  constructor(scope: Construct, id: string, props: KubernetesAccessProps) {
    super(scope, id);
    keepParentLogicalIds(this);
    this.installerRole = this.createInstallerRole(props);
    // No access policy here: the installer associates cluster admin with this entry only while
    // it applies, and disassociates it after (lambda/installer/rbac-installer.ts).
    const installerEntry = new eks.CfnAccessEntry(this, 'RbacInstallerAccessEntry', {
      clusterName: props.clusterName,
      principalArn: this.installerRole.roleArn,
      type: 'STANDARD',
    });
    const installer = this.createInstaller(props);
    skipCheckov(
      installer,
      'CKV_AWS_116',
      'Invoked synchronously, by CloudFormation as a custom resource: a DLQ holds only asynchronous invocations.',
    );
    skipCheckov(
      installer,
      'CKV_AWS_115',
      "Runs once per stack create, update or delete: a reservation would take from the account's pool for nothing.",
    );
    for (const [id, comment] of Object.entries(checkovLambdaReasons)) skipCheckov(installer, id, comment);
    this.rbac = new CustomResource(this, 'Rbac', {
      serviceToken: installer.functionArn,
      resourceType: 'Custom::KubernetesRbac',
      // CloudFormation's own default wait is an hour; the installer gives up after 5 minutes.
      serviceTimeout: Duration.minutes(6),
      properties: {
        // Informational; a change (new rules, another group) triggers an Update that re-applies.
        ClusterName: props.clusterName,
        KubernetesGroup: props.kubernetesGroup,
        RbacDigest: createHash('sha256')
          .update(
            renderRbacYaml(props.kubernetesGroup, props.deadlinePolicy, props.deploymentName) +
              (props.surge ? renderSurgeYaml(props.kubernetesGroup, props.deploymentName) : ''),
          )
          .digest('hex')
          .slice(0, 16),
      },
    });
    // The installer acts through its entry, with its role's policy (the association rights)
    // in place: the dependency on the role covers its DefaultPolicy.
    this.rbac.node.addDependency(installerEntry, this.installerRole);
    // The drainer's entry: a STANDARD entry mapped to a group that only the ClusterRole binds.
    this.drainerEntry = new eks.CfnAccessEntry(this, 'AccessEntry', {
      clusterName: props.clusterName,
      principalArn: props.drainerRole.roleArn,
      type: 'STANDARD',
      kubernetesGroups: [props.kubernetesGroup],
    });
    // Bind the new group before the entry switches to it: on a group change the installer keeps
    // the old group bound too until CloudFormation deletes the old physical id.
    this.drainerEntry.node.addDependency(this.rbac);
  }

  /**
   * The installer's role: it may associate exactly AmazonEKSClusterAdminPolicy, cluster-wide,
   * with its own access entry, and disassociate it. IAM cannot tell which entry a policy goes
   * to but by the entry's ARN: `access-entry/<cluster>/role/<account>/<role name>/<uuid>`.
   * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonelastickubernetesservice.html
   */
  private createInstallerRole(props: KubernetesAccessProps): iam.Role {
    const stack = Stack.of(this);
    const role = new iam.Role(this, 'RbacInstallerRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Installs the graceful node termination ClusterRole in ${props.clusterName} during deployment`,
    });
    role.addToPolicy(new iam.PolicyStatement({ actions: ['eks:DescribeCluster'], resources: [props.clusterArn] }));
    const ownEntry = stack.formatArn({
      service: 'eks',
      resource: 'access-entry',
      resourceName: `${props.clusterName}/role/${stack.account}/${role.roleName}/*`,
    });
    const clusterAdmin = {
      ArnEquals: {
        'eks:policyArn': `arn:${stack.partition}:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy`,
      },
    };
    role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['eks:AssociateAccessPolicy'],
        resources: [ownEntry],
        conditions: { ...clusterAdmin, StringEquals: { 'eks:accessScope': 'cluster' } },
      }),
    );
    // Taking the policy away only lowers rights, so no scope condition: a disassociation names
    // no scope, and a condition on a key its request may lack would deny the revoke.
    role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['eks:DisassociateAccessPolicy'],
        resources: [ownEntry],
        conditions: clusterAdmin,
      }),
    );
    const cluster = flattenForNag(stack.resolve(props.clusterName));
    const roleName = `<${stableLogicalId(role.node.defaultChild as CfnElement)}>`;
    acknowledgeNag(
      role,
      `IAM5[Resource::arn:<AWS::Partition>:eks:<AWS::Region>:<AWS::AccountId>:access-entry/${cluster}/role/` +
        `<AWS::AccountId>/${roleName}/*]`,
      "An access entry ARN ends in an id EKS generates: the entry is matched by its cluster and this role's own " +
        'name, with "*" only in the id position, and only for the cluster admin policy.',
    );
    grantVpcAccess(role, props.vpcPlacement);
    return role;
  }

  private createInstaller(props: KubernetesAccessProps): lambda.Function {
    const logGroup = new logs.LogGroup(this, 'RbacInstallerLogs', {
      encryptionKey: props.key,
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    grantLogs(this.installerRole, logGroup);
    return new lambda.Function(this, 'RbacInstaller', {
      description:
        `Installs the graceful node termination RBAC in ${props.clusterName} (CloudFormation custom ` + `resource)`,
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      code: props.code,
      handler: lambdaHandlers.rbacInstaller,
      role: this.installerRole,
      logGroup,
      timeout: Duration.minutes(5),
      memorySize: 256,
      // What it installs comes from here, never from the invoking event (rbac-installer.ts).
      environment: {
        RBAC_NAME: props.deploymentName,
        CLUSTER_NAME: props.clusterName,
        KUBERNETES_GROUP: props.kubernetesGroup,
        DEADLINE_POLICY: props.deadlinePolicy,
        // Surge before evict: patch on Deployments, and the admission policy fencing it.
        ...(props.surge ? { SURGE_BEFORE_EVICT: 'true' } : {}),
        // Whose entry it associates cluster admin with while it works.
        INSTALLER_ROLE_ARN: this.installerRole.roleArn,
        // A request naming another stack is refused.
        STACK_ID: Stack.of(this).stackId,
      },
      ...props.vpcPlacement,
    });
  }
}
