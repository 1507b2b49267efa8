// The release template's conditions, mappings and rules: what the parameters switch on and
// what CloudFormation checks before it creates anything (release-parameters.ts defines the
// parameters they read).
import { Duration, aws_events as events } from 'aws-cdk-lib';
import { DeadlinePolicy } from '../lambda/shared/config.js';
import { reconcileEventAge } from './event-rules.js';
import { conditionNames, parameterNames as p, reconcileIntervalChoices, reconcileMapping } from './release-names.js';
import type { Json, JsonObject } from './release-rewrite.js';

const equals = (parameter: string, value: Json): Json => ({ 'Fn::Equals': [{ Ref: parameter }, value] });
const not = (condition: Json): Json => ({ 'Fn::Not': [condition] });

export function releaseConditions(): JsonObject {
  const c = conditionNames;
  const noTopic = equals(p.alarmTopicArn, '');
  return {
    [c.retain]: equals(p.deadlinePolicy, DeadlinePolicy.RETAIN),
    [c.releases]: not(equals(p.deadlinePolicy, DeadlinePolicy.RETAIN)),
    [c.alarmTopic]: not(noTopic),
    // The topic wins when both are given, as in the construct.
    [c.alarmEmail]: { 'Fn::And': [not(equals(p.alarmEmail, '')), noTopic] },
    [c.inVpc]: not({ 'Fn::Equals': [{ 'Fn::Join': ['', { Ref: p.subnetIds }] }, ''] }),
    [c.withoutAccess]: equals(p.manageKubernetesAccess, 'false'),
    [c.managesAccess]: equals(p.manageKubernetesAccess, 'true'),
    [c.spot]: equals(p.spotInterruptions, 'true'),
    [c.withoutReconciler]: equals(p.reconcileMarks, 'false'),
    [c.reconciles]: equals(p.reconcileMarks, 'true'),
    // Off by the parameter while the reconciler runs (without the reconciler, WithoutReconciler says so).
    [c.withoutRepair]: { 'Fn::And': [equals(p.repair, 'off'), equals(p.reconcileMarks, 'true')] },
    [c.repairs]: { 'Fn::And': [not(equals(p.repair, 'off')), equals(p.reconcileMarks, 'true')] },
    [c.withoutTargetWait]: equals(p.waitForTargets, 'false'),
    [c.withoutVolumeWait]: equals(p.waitForVolumeDetach, 'false'),
    [c.boundary]: not(equals(p.permissionsBoundary, '')),
    [c.dashboard]: equals(p.dashboard, 'true'),
    ...settingConditions(),
  };
}

/** The conditions of the settings that change one or two things each. */
function settingConditions(): JsonObject {
  const c = conditionNames;
  return {
    [c.kubernetesGroup]: not(equals(p.kubernetesGroup, '')),
    [c.evictsDaemonSetPods]: equals(p.evictDaemonSetPods, 'true'),
    [c.withoutSiblingCordon]: equals(p.cordonDoomedSiblings, 'false'),
    [c.withoutOutOfService]: equals(p.outOfServiceAfterRelease, 'false'),
    [c.outOfService]: equals(p.outOfServiceAfterRelease, 'true'),
    [c.surges]: equals(p.surgeBeforeEvict, 'true'),
    [c.withoutRefreshMarks]: equals(p.markOutdatedOnRefresh, 'false'),
    [c.marksRefreshes]: equals(p.markOutdatedOnRefresh, 'true'),
    // A Number parameter's Ref is its text.
    [c.reservedConcurrency]: not(equals(p.reservedConcurrency, '0')),
    [c.retainsData]: equals(p.removalPolicy, 'retain'),
    [c.serviceLinkedRole]: not(equals(p.serviceLinkedRole, '')),
    [c.runbook]: not(equals(p.runbookUrl, '')),
  };
}

/** The reconciler's rate and event age for each interval the template offers, as the construct makes them. */
export function releaseMappings(): JsonObject {
  const rows = reconcileIntervalChoices.map((minutes) => {
    const interval = Duration.minutes(minutes);
    return [
      String(minutes),
      { Rate: events.Schedule.rate(interval).expressionString, MaxEventAge: reconcileEventAge(interval).toSeconds() },
    ];
  });
  return { [reconcileMapping]: Object.fromEntries(rows) };
}

/** What CloudFormation checks before it creates anything. */
export function releaseRules(): JsonObject {
  const assert = (condition: Json, description: string) => ({
    Assertions: [{ Assert: condition, AssertDescription: description }],
  });
  return {
    GroupNamesNotEmpty: assert(
      not({ 'Fn::Contains': [{ Ref: p.groups }, ''] }),
      'AutoScalingGroupNames must name at least one group, without empty entries',
    ),
    RepairNeedsReconciler: {
      RuleCondition: not(equals(p.repair, 'off')),
      ...assert(equals(p.reconcileMarks, 'true'), 'Repair needs ReconcileMarks=true'),
    },
    // The construct refuses retain for groups it does not define unless told their policy is set.
    RetainNeedsRetentionSetOutside: {
      RuleCondition: equals(p.deadlinePolicy, DeadlinePolicy.RETAIN),
      ...assert(
        equals(p.retentionSetOutside, 'true'),
        "DeadlinePolicy=retain needs RetentionSetOutside=true: first set each group's instance lifecycle policy to " +
          'retain on ABANDON (docs/cloudformation.md), or ABANDON terminates the instance like CONTINUE',
      ),
    },
    SecurityGroupsWithSubnets: {
      RuleCondition: not({ 'Fn::Contains': [{ Ref: p.subnetIds }, ''] }),
      ...assert(
        not({ 'Fn::Contains': [{ Ref: p.securityGroupIds }, ''] }),
        'SubnetIds need SecurityGroupIds (no empty entries): the functions run in those security groups',
      ),
    },
  };
}
