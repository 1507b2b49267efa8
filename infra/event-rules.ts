// What invokes the drainer besides the hooks' topic: EventBridge rules for the served groups'
// instance refreshes, Spot interruption warnings, instance terminations, and the reconciler's schedule.
import {
  Duration,
  Lazy,
  aws_events as events,
  aws_events_targets as eventTargets,
  aws_lambda as lambda,
} from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { keepParentLogicalIds } from './logical-ids.js';

export interface EventRulesProps {
  readonly function: lambda.IFunction;
  /** The served groups; read at synthesis. */
  readonly groupNames: readonly string[];
  readonly markOutdatedOnRefresh: boolean;
  readonly spotInterruptions: boolean;
  readonly reconcileMarks: boolean;
  readonly reconcileInterval: Duration;
  readonly outOfServiceAfterRelease: boolean;
}

/** EventBridge keeps an event for retries from 60 s to 24 h. */
const eventAgeLimits = { min: 60, max: 24 * 3600 };

/** A reconciler pass still not delivered when the next one is due is superseded by it. */
export function reconcileEventAge(interval: Duration): Duration {
  return Duration.seconds(Math.min(eventAgeLimits.max, Math.max(eventAgeLimits.min, interval.toSeconds())));
}

export class EventRules extends Construct {
  constructor(scope: Construct, id: string, props: EventRulesProps) {
    super(scope, id);
    keepParentLogicalIds(this);
    if (props.markOutdatedOnRefresh) this.addInstanceRefreshes(props);
    if (props.spotInterruptions) {
      new events.Rule(this, 'SpotInterruptions', {
        description: 'Spot interruption warnings and rebalance recommendations, to the drainer',
        eventPattern: {
          source: ['aws.ec2'],
          detailType: ['EC2 Spot Instance Interruption Warning', 'EC2 Instance Rebalance Recommendation'],
        },
        // Two retries at most: a warning older than two minutes is moot.
        targets: [
          new eventTargets.LambdaFunction(props.function, { retryAttempts: 2, maxEventAge: Duration.minutes(2) }),
        ],
      });
    }
    if (props.outOfServiceAfterRelease) {
      new events.Rule(this, 'InstanceTerminations', {
        description:
          'Terminated instances, to the drainer: a node our drain released with pods still on it is tainted ' +
          "out-of-service (EC2's events name no group: the drainer asks EC2 which group it was)",
        eventPattern: {
          source: ['aws.ec2'],
          detailType: ['EC2 Instance State-change Notification'],
          detail: { state: ['terminated'] },
        },
        targets: [
          new eventTargets.LambdaFunction(props.function, { retryAttempts: 2, maxEventAge: Duration.hours(1) }),
        ],
      });
    }
    if (props.reconcileMarks) {
      new events.Rule(this, 'ReconcileSchedule', {
        description:
          'The reconciler: takes back marks and tags whose owner is gone, resumes drains whose hand-off was lost',
        // https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-scheduled-rule-pattern.html
        schedule: events.Schedule.rate(props.reconcileInterval),
        targets: [
          new eventTargets.LambdaFunction(props.function, {
            retryAttempts: 2,
            maxEventAge: reconcileEventAge(props.reconcileInterval),
          }),
        ],
      });
    }
  }

  private addInstanceRefreshes(props: EventRulesProps): void {
    new events.Rule(this, 'InstanceRefreshes', {
      description:
        'Instance refresh events of the served groups, to the drainer (it marks the outdated nodes, then takes the ' +
        'marks back)',
      eventPattern: {
        source: ['aws.autoscaling'],
        detailType: [
          'EC2 Auto Scaling Instance Refresh Started',
          'EC2 Auto Scaling Instance Refresh Succeeded',
          'EC2 Auto Scaling Instance Refresh Failed',
          'EC2 Auto Scaling Instance Refresh Cancelled',
          'EC2 Auto Scaling Instance Refresh Rollback Started',
          'EC2 Auto Scaling Instance Refresh Rollback Succeeded',
          'EC2 Auto Scaling Instance Refresh Rollback Failed',
        ],
        detail: { AutoScalingGroupName: Lazy.list({ produce: () => [...props.groupNames] }) },
      },
      targets: [new eventTargets.LambdaFunction(props.function, { retryAttempts: 2, maxEventAge: Duration.hours(1) })],
    });
  }
}
