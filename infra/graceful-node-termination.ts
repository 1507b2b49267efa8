// The construct: launch and terminate lifecycle hooks on existing self-managed node groups,
// one encrypted SNS topic, the drainer Lambda, its Kubernetes access, and alarms.
import {
  Annotations,
  Aspects,
  Stack,
  aws_autoscaling as autoscaling,
  aws_cloudwatch as cloudwatch,
  aws_iam as iam,
  aws_kms as kms,
  aws_lambda as lambda,
  aws_logs as logs,
  aws_sns as sns,
  aws_sqs as sqs,
} from 'aws-cdk-lib';
import { Construct, type IConstruct } from 'constructs';
import { Alarms } from './alarms.js';
import { Observability } from './dashboard.js';
import { createDrainer } from './drainer.js';
import { EventRules } from './event-rules.js';
import { KubernetesAccess } from './kubernetes-access.js';
import { lambdaCode } from './lambda-code.js';
import { LifecycleHooks } from './lifecycle-hooks.js';
import { deploymentMetric, type LogMessageMetric } from './metrics.js';
import { allowPublishOnlyBy, createNotifications } from './notifications.js';
import { rebootsAny } from '../lambda/shared/config.js';
import { DeadlinePolicy, Mode, type AddAutoScalingGroupOptions, type GracefulNodeTerminationProps } from './props.js';
import { RepairAction, type RepairOverride, type RepairProps } from './repair-props.js';
import { resolveSettings, type Settings } from './settings.js';

export {
  DrainBehavior,
  type DrainRule,
  type DrainRulePods,
  type DrainRuleProps,
  type LabelSelector,
  type SelectorRequirement,
} from './drain-rule-props.js';
export {
  DeadlinePolicy,
  Mode,
  RepairAction,
  type AddAutoScalingGroupOptions,
  type GracefulNodeTerminationProps,
  type RepairOverride,
  type RepairProps,
};

/**
 * Gives self-managed node groups the graceful termination of EKS managed node groups:
 * label, cordon, evict (PodDisruptionBudgets hold), wait for load balancers, then let the
 * instance go.
 *
 * The key, topic, queue and drainer are its own children; the hooks, the Kubernetes access,
 * the event rules and the alarms are parts of their own that keep the logical IDs their
 * resources had before the split (logical-ids.ts).
 */
export class GracefulNodeTermination extends Construct {
  /** This deployment's name (see the deploymentName prop). */
  readonly deploymentName: string;
  /** The topic both lifecycle hooks of every group notify. */
  readonly topic: sns.Topic;
  /** Notifications the function could not process after its retries. */
  readonly failedNotifications: sqs.Queue;
  /** The drainer. */
  readonly function: lambda.Function;
  /** The drainer's role: the IAM principal mapped to the Kubernetes group. */
  readonly role: iam.Role;
  /** Alarms: function errors, failed notifications, drains that hit their deadline, launches. */
  readonly alarms: cloudwatch.Alarm[];
  /** The dashboard, with the `dashboard` prop. */
  readonly dashboard?: cloudwatch.Dashboard;

  private readonly hooks: LifecycleHooks;

  constructor(scope: Construct, id: string, props: GracefulNodeTerminationProps) {
    super(scope, id);
    const settings = resolveSettings(this, props);
    this.deploymentName = settings.deploymentName;
    const { key, topic, failedNotifications } = createNotifications(this, id, settings);
    this.topic = topic;
    this.failedNotifications = failedNotifications;
    this.hooks = new LifecycleHooks(this, 'LifecycleHooks', { topic: this.topic, ...settings });
    const clusterArn = Stack.of(this).formatArn({
      service: 'eks',
      resource: 'cluster',
      resourceName: settings.clusterName,
    });
    const code = lambdaCode();
    const drainer = createDrainer(this, {
      settings,
      props,
      topic: this.topic,
      failedNotifications: this.failedNotifications,
      groupNames: this.hooks.groupNames,
      clusterArn,
      code,
      key,
    });
    this.function = drainer.function;
    this.role = drainer.role;
    this.connectDrainer(settings);
    for (const name of props.autoScalingGroupNames ?? []) this.addAutoScalingGroupName(name);
    for (const group of props.autoScalingGroups ?? []) this.addAutoScalingGroup(group);
    this.node.addValidation({ validate: () => (this.hooks.groupNames.length === 0 ? [noGroupMessage] : []) });
    this.addClusterAccessAndRules(settings, props, { clusterArn, code, key });
    this.alarms = this.createAlarms(settings, props, drainer.logGroup, key);
    this.dashboard = new Observability(this, 'Observability', {
      deploymentName: settings.deploymentName,
      logGroup: drainer.logGroup,
      function: this.function,
      failedNotifications: this.failedNotifications,
      dashboard: props.dashboard ?? false,
    }).dashboard;
    this.applyRoleSettings(props);
  }

  /** The served groups' names (tokens for groups of this app), in the order they were added. */
  get autoScalingGroupNames(): string[] {
    return [...this.hooks.groupNames];
  }

  /**
   * Puts a launch and a terminate hook on one more group of this app (defined or imported) and
   * lets the function complete them. `options.id` names the construct that holds the group's
   * two hooks (their logical IDs derive from it); by default `Group-<name>`, or for a name that
   * is a token `Group<hash of the group's construct path>`. Versions before 0.2 numbered
   * token-named groups by their position among all groups added, from 1 (`Group1`, `Group2`,
   * ...: names passed in props first, then groups, then these calls): pass that id to keep
   * such a group's hooks on upgrade (docs/upgrades.md, "Upgrading the construct").
   */
  addAutoScalingGroup(group: autoscaling.IAutoScalingGroup, options: AddAutoScalingGroupOptions = {}): void {
    this.hooks.addGroup(group, options.id);
  }

  /**
   * Puts a launch and a terminate hook on one more group, given by name (a group made by
   * eksctl, Terraform or another stack), and lets the function complete them. `options.id` as
   * for `addAutoScalingGroup`; for a name that is a token the default hashes what it stands for.
   */
  addAutoScalingGroupName(name: string, options: AddAutoScalingGroupOptions = {}): void {
    this.hooks.addGroup(name, options.id);
  }

  /**
   * The drainer's rights on the groups and the topic, and what every hook waits for: a
   * termination during the first deploy must reach a drainer that can act: subscribed, SNS
   * allowed to invoke it, its own rights (and, from grantToDrainer, its rights on the groups) in place.
   */
  private connectDrainer(settings: Settings): void {
    this.hooks.grantToDrainer(this.role, {
      deleteRefreshStrategyTag: settings.reconcileMarks,
      repair: settings.repair && { reboot: rebootsAny(settings.repair) },
    });
    allowPublishOnlyBy(this.topic, this.hooks.role, this.role);
    this.hooks.requireBeforeHooks(
      this.role,
      ...this.function.node.findAll().filter((c) => c instanceof sns.Subscription || isSnsInvokePermission(c)),
    );
  }

  /** The Kubernetes access (unless the deployer manages it) and the EventBridge rules. */
  private addClusterAccessAndRules(
    settings: Settings,
    props: GracefulNodeTerminationProps,
    { clusterArn, code, key }: { readonly clusterArn: string; readonly code: lambda.Code; readonly key: kms.IKey },
  ): void {
    if (settings.manageKubernetesAccess) {
      const access = new KubernetesAccess(this, 'KubernetesAccess', {
        ...settings,
        clusterArn,
        drainerRole: this.role,
        code,
        key,
        surge: props.surgeBeforeEvict !== undefined,
      });
      this.hooks.requireBeforeHooks(access.drainerEntry, access.rbac);
    }
    new EventRules(this, 'EventRules', {
      ...settings,
      function: this.function,
      groupNames: this.hooks.groupNames,
      outOfServiceAfterRelease: props.outOfServiceAfterRelease ?? true,
    });
  }

  /** Drains that reached their deadline with pods still on the node. Sum over 5 minutes by default. */
  metricDrainsTimedOut(options?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.logMessageMetric('DrainsTimedOut', options);
  }

  /** Launches admitted without a health check (the cluster could not be reached). Sum over 5 minutes by default. */
  metricLaunchesUnchecked(options?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.logMessageMetric('LaunchesUnchecked', options);
  }

  /** Launches abandoned because the node did not join Ready in time. Sum over 5 minutes by default. */
  metricLaunchesAbandoned(options?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.logMessageMetric('LaunchesAbandoned', options);
  }

  /**
   * Instances retained at the drain deadline. Counted only with DeadlinePolicy.RETAIN (no other
   * policy retains). Sum over 5 minutes by default.
   */
  metricInstancesRetained(options?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return this.logMessageMetric('InstancesRetained', options);
  }

  /**
   * Marks (drain and refresh marks) the reconciler took back because their owner was gone, per
   * pass; written by the drainer as EMF with Transition=reconcile, Outcome=reconciled. Sum over
   * 5 minutes by default.
   */
  metricStaleMarksRemoved(options?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return deploymentMetric(this.deploymentName, 'StaleMarksRemoved', options, {
      Transition: 'reconcile',
      Outcome: 'reconciled',
    });
  }

  private logMessageMetric(metricName: LogMessageMetric, options?: cloudwatch.MetricOptions): cloudwatch.Metric {
    return deploymentMetric(this.deploymentName, metricName, options);
  }

  private createAlarms(
    settings: Settings,
    props: GracefulNodeTerminationProps,
    logGroup: logs.ILogGroup,
    key: kms.IKey,
  ): cloudwatch.Alarm[] {
    const alarms = new Alarms(this, 'Alarms', {
      deploymentName: settings.deploymentName,
      deadlinePolicy: settings.deadlinePolicy,
      repair: settings.repair !== undefined,
      alarmTopic: props.alarmTopic,
      alarmEmail: props.alarmEmail,
      runbookUrl: props.runbookUrl,
      logGroup,
      function: this.function,
      failedNotifications: this.failedNotifications,
      metrics: this,
      key,
    });
    if (alarms.topic === undefined) {
      Annotations.of(this).addWarningV2(
        'graceful-node-termination:alarms-unrouted',
        'The alarms notify no one: pass alarmEmail (cdk deploy -c alarmEmail=<address>) or alarmTopic.',
      );
    }
    return [...alarms.alarms];
  }

  /** The permissions boundary and path on every role of the construct, those of its parts included. */
  private applyRoleSettings({ permissionsBoundary, rolePath }: GracefulNodeTerminationProps): void {
    if (permissionsBoundary) iam.PermissionsBoundary.of(this).apply(permissionsBoundary);
    if (rolePath === undefined) return;
    Aspects.of(this).add({
      visit: (node: IConstruct) => {
        if (node instanceof iam.CfnRole) node.path = rolePath;
      },
    });
  }
}

/** The Lambda permission that lets SNS invoke the function (made by its SNS event source). */
function isSnsInvokePermission(c: IConstruct): boolean {
  return c instanceof lambda.CfnPermission && c.principal === 'sns.amazonaws.com';
}

const noGroupMessage =
  'GracefulNodeTermination has no Auto Scaling group: pass autoScalingGroupNames or autoScalingGroups, or call ' +
  'addAutoScalingGroupName() or addAutoScalingGroup()';
