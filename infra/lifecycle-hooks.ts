// The served groups: per group a launch and a terminate lifecycle hook that notify the topic,
// the role Auto Scaling publishes with, and the drainer's rights on exactly those groups.
import { createHash } from 'node:crypto';
import {
  ArnFormat,
  Lazy,
  Stack,
  Token,
  aws_autoscaling as autoscaling,
  aws_iam as iam,
  aws_sns as sns,
  type Duration,
} from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { DeadlinePolicy } from '../lambda/shared/config.js';
import { refreshStrategyTag } from '../lambda/shared/group-tags.js';
import { keepParentLogicalIds } from './logical-ids.js';
import { acknowledgeNag, flattenForNag, kmsGrantReason } from './nag.js';
import { validateGroupName } from './prop-checks.js';

export interface LifecycleHooksProps {
  /** Where every hook sends its notifications. */
  readonly topic: sns.ITopic;
  readonly clusterName: string;
  readonly hookNames: { readonly launch: string; readonly terminate: string };
  readonly heartbeatTimeout: Duration;
  readonly deadlinePolicy: DeadlinePolicy;
  /** The groups given by name retain on ABANDON already (see the construct's prop). */
  readonly retentionSetOutside: boolean;
}

export class LifecycleHooks extends Construct {
  private readonly names: string[] = [];
  /** The served groups' ARNs, resolved at synthesis (groups are added until then). */
  readonly groupArns: string[];
  /** The role Auto Scaling assumes to publish the hooks' notifications. */
  readonly role: iam.Role;
  /** The drainer's rights on the served groups (see grantToDrainer). */
  private readonly groupPolicy: iam.Policy;
  private readonly hooks: autoscaling.CfnLifecycleHook[] = [];
  /** What must exist before any hook may fire; see requireBeforeHooks. */
  private readonly prerequisites: Construct[] = [];

  constructor(
    scope: Construct,
    id: string,
    private readonly props: LifecycleHooksProps,
  ) {
    super(scope, id);
    keepParentLogicalIds(this);
    const stack = Stack.of(this);
    // The same ARN pattern everywhere: "*" only in the generated-id position, the name exact.
    this.groupArns = Lazy.list({ produce: () => this.names.map((name) => groupArn(stack, name)) });
    this.role = new iam.Role(this, 'HookRole', {
      // Confused-deputy guard: Auto Scaling may assume it only for our own groups.
      // https://docs.aws.amazon.com/autoscaling/ec2/userguide/cross-service-confused-deputy-prevention.html
      assumedBy: new iam.ServicePrincipal('autoscaling.amazonaws.com', {
        conditions: {
          StringEquals: { 'aws:SourceAccount': stack.account },
          ArnLike: { 'aws:SourceArn': this.groupArns },
        },
      }),
      description: 'Lets the lifecycle hooks publish to the graceful node termination topic',
    });
    props.topic.grantPublish(this.role);
    acknowledgeNag(this.role, 'IAM5[Action::kms:GenerateDataKey*]', kmsGrantReason);
    this.groupPolicy = new iam.Policy(this, 'LifecyclePolicy', {
      statements: [
        new iam.PolicyStatement({
          actions: ['autoscaling:CompleteLifecycleAction', 'autoscaling:RecordLifecycleActionHeartbeat'],
          resources: this.groupArns,
        }),
      ],
    });
  }

  /** The served groups' names, in the order they were added. */
  get groupNames(): readonly string[] {
    return this.names;
  }

  /**
   * Lets the drainer complete and heartbeat the served groups' lifecycle actions and, for the
   * reconciler, remove the one tag `upgrade` sets on them (aws:TagKeys: no other tag, and only
   * on these groups). https://docs.aws.amazon.com/autoscaling/ec2/userguide/control-access-using-iam.html
   */
  grantToDrainer(
    role: iam.IRole,
    options: { readonly deleteRefreshStrategyTag: boolean; readonly repair?: { readonly reboot: boolean } | undefined },
  ): void {
    if (options.repair) this.grantRepair(options.repair.reboot);
    if (options.deleteRefreshStrategyTag) {
      this.groupPolicy.addStatements(
        new iam.PolicyStatement({
          actions: ['autoscaling:DeleteTags'],
          resources: this.groupArns,
          conditions: { 'ForAllValues:StringEquals': { 'aws:TagKeys': [refreshStrategyTag] } },
        }),
      );
    }
    this.groupPolicy.attachToRole(role);
    // A hook that fires before the drainer may complete its action holds the instance for nothing.
    this.requireBeforeHooks(this.groupPolicy);
  }

  /**
   * Node auto repair: SetInstanceHealth on the served groups only, and with a Reboot rule
   * RebootInstances on the instances Auto Scaling tagged as theirs (aws:autoscaling:groupName).
   * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2autoscaling.html
   */
  private grantRepair(reboot: boolean): void {
    this.groupPolicy.addStatements(
      new iam.PolicyStatement({ actions: ['autoscaling:SetInstanceHealth'], resources: this.groupArns }),
    );
    if (!reboot) return;
    const stack = Stack.of(this);
    this.groupPolicy.addStatements(
      new iam.PolicyStatement({
        actions: ['ec2:RebootInstances'],
        resources: [stack.formatArn({ service: 'ec2', resource: 'instance', resourceName: '*' })],
        conditions: {
          StringEquals: { 'aws:ResourceTag/aws:autoscaling:groupName': Lazy.list({ produce: () => this.names }) },
        },
      }),
    );
    acknowledgeNag(
      this.groupPolicy,
      'IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:instance/*]',
      'RebootInstances only on instances tagged aws:autoscaling:groupName with a served group.',
    );
  }

  /** Adds a prerequisite to every hook made so far and every hook made later. */
  requireBeforeHooks(...constructs: Construct[]): void {
    this.prerequisites.push(...constructs);
    for (const hook of this.hooks) hook.node.addDependency(...constructs);
  }

  /** Puts a launch and a terminate hook on one more group. */
  addGroup(group: autoscaling.IAutoScalingGroup | string, id?: string): void {
    const name = typeof group === 'string' ? group : group.autoScalingGroupName;
    if (this.props.deadlinePolicy === DeadlinePolicy.RETAIN) this.retainOnAbandon(group, name);
    if (!Token.isUnresolved(name)) validateGroupName(name);
    if (this.names.includes(name)) throw new Error(`Auto Scaling group ${name} was added twice`);
    this.names.push(name);
    this.acknowledgeGroupArn(name);
    const scope = new Construct(this, id ?? this.groupId(group, name));
    const { hookNames, heartbeatTimeout, clusterName } = this.props;
    for (const [id, transition, hookName, defaultResult] of [
      // A launch nobody checks goes ahead (ABANDON would terminate the new instance).
      ['Launch', 'autoscaling:EC2_INSTANCE_LAUNCHING', hookNames.launch, 'CONTINUE'],
      // The API default is ABANDON, so set explicitly: a broken handler must not hold a node for
      // nothing. Under RETAIN every path fails towards keeping the instance, a lost notification too.
      [
        'Terminate',
        'autoscaling:EC2_INSTANCE_TERMINATING',
        hookNames.terminate,
        this.props.deadlinePolicy === DeadlinePolicy.RETAIN ? 'ABANDON' : 'CONTINUE',
      ],
    ] as const) {
      const hook = new autoscaling.CfnLifecycleHook(scope, id, {
        autoScalingGroupName: name,
        lifecycleHookName: hookName,
        lifecycleTransition: transition,
        heartbeatTimeout: heartbeatTimeout.toSeconds(),
        defaultResult,
        notificationTargetArn: this.props.topic.topicArn,
        roleArn: this.role.roleArn,
        // The handler refuses notifications naming another cluster.
        notificationMetadata: JSON.stringify({ clusterName }),
      });
      // The role must be able to publish before Auto Scaling sends the test notification.
      const publishGrant = this.role.node.tryFindChild('DefaultPolicy');
      if (publishGrant) hook.node.addDependency(publishGrant);
      if (typeof group !== 'string' && group.node.defaultChild) hook.node.addDependency(group);
      hook.node.addDependency(...this.prerequisites);
      this.hooks.push(hook);
    }
  }

  /**
   * The construct ID of a group's hooks. A literal name is readable and stable; a token (a
   * group of this app, a parameter, an import) is not known yet, so the ID hashes what the
   * token stands for, which does not depend on the order groups were added. Hash IDs have no
   * "-" after "Group", so they never collide with a name's.
   */
  private groupId(group: autoscaling.IAutoScalingGroup | string, name: string): string {
    if (!Token.isUnresolved(name)) return `Group-${name}`;
    const source = typeof group === 'string' ? JSON.stringify(Stack.of(this).resolve(name)) : group.node.path;
    return `Group${createHash('sha256').update(source).digest('hex').slice(0, 8)}`;
  }

  /** cdk-nag names the finding on the group ARN's "*" by the flattened ARN. */
  private acknowledgeGroupArn(name: string): void {
    const stack = Stack.of(this);
    acknowledgeNag(
      this.groupPolicy,
      `IAM5[Resource::${flattenForNag(stack.resolve(groupArn(stack, name)))}]`,
      'Auto Scaling group ARNs contain a generated id: the group is matched by its exact name with "*" only in the ' +
        'id ' +
        'position.',
    );
  }

  /**
   * DeadlinePolicy.RETAIN only keeps an instance when the group's instance lifecycle policy
   * retains on a terminate hook's ABANDON. Set it on groups this app defines; for groups by
   * name, refuse unless the deployer says it is set (we will not change, and then have to
   * restore, a setting of a group we do not own).
   * https://docs.aws.amazon.com/autoscaling/ec2/userguide/instance-lifecycle-policy.html
   */
  private retainOnAbandon(group: autoscaling.IAutoScalingGroup | string, name: string): void {
    const cfn = typeof group === 'string' ? undefined : group.node.defaultChild;
    if (cfn instanceof autoscaling.CfnAutoScalingGroup) {
      cfn.instanceLifecyclePolicy = { retentionTriggers: { terminateHookAbandon: 'retain' } };
      return;
    }
    if (this.props.retentionSetOutside) return;
    throw new Error(
      `deadlinePolicy 'retain' needs group ${name} to retain instances on ABANDON, and this construct cannot set ` +
        `that ` +
        `on a group it does not define. ` +
        `Set it (aws autoscaling update-auto-scaling-group --auto-scaling-group-name ${name} ` +
        `--instance-lifecycle-policy 'RetentionTriggers={TerminateHookAbandon=retain}') ` +
        `and pass retentionSetOutside: true, or define the group in this app.`,
    );
  }
}

function groupArn(stack: Stack, name: string): string {
  return stack.formatArn({
    service: 'autoscaling',
    resource: 'autoScalingGroup',
    resourceName: `*:autoScalingGroupName/${name}`,
    arnFormat: ArnFormat.COLON_RESOURCE_NAME,
  });
}
