// Something to look at: an opt-in CloudWatch dashboard of what the drainer writes (its EMF
// metrics, the log-line metrics, Lambda's and the queue's own), and saved Logs Insights
// queries for what metrics cannot say (one instance's timeline, the slowest drains, what
// blocked), built from the metric names, dimensions and log keys the handler really writes
// (docs/operations.md, "Metrics" and "Logs").
import {
  Aws,
  Duration,
  aws_cloudwatch as cloudwatch,
  aws_lambda as lambda,
  aws_logs as logs,
  aws_sqs as sqs,
} from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { drainTimedOutMessage } from '../lambda/cluster/events/log-messages.js';
import { keepParentLogicalIds } from './logical-ids.js';
import { deploymentMetric, type LogMessageMetric } from './metrics.js';

/**
 * What a termination ends as (lambda/termination/state.ts, TerminateOutcome, less handed-off: hand-offs emit nothing):
 * the outcomes graph's series.
 */
export const terminationOutcomes = [
  'drained',
  'timed-out',
  'retained',
  'node-not-found',
  'node-gone',
  'superseded',
] as const;

/**
 * The log messages of an eviction the API refused (lambda/eviction/drain-reports.ts): each
 * refusal, the pod two budgets select, and a budget still refusing after minutes. The widget and
 * the what-blocked query count the same ones.
 */
const blockedMessages = [
  'eviction blocked, will retry',
  'eviction impossible: more than one PodDisruptionBudget selects the pod',
  'eviction blocked by a budget for minutes',
];

export interface DashboardProps {
  readonly deploymentName: string;
  readonly logGroup: logs.ILogGroup;
  readonly function: lambda.IFunction;
  readonly failedNotifications: sqs.IQueue;
  /** Also build the dashboard (the queries are always saved: they cost nothing). */
  readonly dashboard: boolean;
}

/** The saved queries, by name under `<deploymentName>/`. */
export function savedQueries(): Record<string, string> {
  const blocked = blockedMessages.map((m) => JSON.stringify(m)).join(', ');
  return {
    'timeline-of-one-instance': [
      'fields @timestamp, level, message, node, outcome, pod, reason, budget, handOff',
      '| filter instanceId = "i-0123456789abcdef0"',
      '| sort @timestamp asc',
      '| limit 1000',
    ].join('\n'),
    'slowest-drains': [
      'filter message = "termination handled"',
      '| fields @timestamp, instanceId, autoScalingGroupName, outcome, durationMs / 1000 as seconds, podsEvicted',
      '| sort durationMs desc',
      '| limit 50',
    ].join('\n'),
    'what-blocked': [
      `filter message in [${blocked}, ${JSON.stringify(drainTimedOutMessage)}]`,
      '| stats count(*) as answers, count_distinct(instanceId) as instances, latest(detail) as lastDetail by reason, ' +
        'budget',
      '| sort answers desc',
    ].join('\n'),
  };
}

export class Observability extends Construct {
  /** Undefined unless the `dashboard` prop is on. */
  readonly dashboard: cloudwatch.Dashboard | undefined;

  constructor(scope: Construct, id: string, props: DashboardProps) {
    super(scope, id);
    keepParentLogicalIds(this);
    for (const [name, queryString] of Object.entries(savedQueries())) {
      // The L1: logs.QueryString composes a query from clauses, these are written whole.
      new logs.CfnQueryDefinition(this, `Query-${name}`, {
        name: `${props.deploymentName}/${name}`,
        queryString,
        logGroupNames: [props.logGroup.logGroupName],
      });
    }
    this.dashboard = props.dashboard ? createDashboard(this, props) : undefined;
  }
}

type MetricOf = (
  name: string,
  dimensions: Record<string, string>,
  options?: cloudwatch.MetricOptions,
) => cloudwatch.Metric;

const terminating = (outcome: string) => ({ Transition: 'terminating', Outcome: outcome });
/**
 * Every series of some of our terminating metrics in one search expression: a widget's worth of
 * metric lines in a few dozen bytes (the release template must fit a TemplateBody).
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/search-expression-syntax.html
 */
const search = (deploymentName: string, metricName: string, statistic: string) =>
  new cloudwatch.MathExpression({
    expression:
      `SEARCH('{GracefulNodeTermination,Outcome,Transition,service} MetricName=${metricName} ` +
      `Transition="terminating" service="${deploymentName}"', '${statistic}', 300)`,
    label: '',
    period: Duration.minutes(5),
  });

const graph = (title: string, left: cloudwatch.IMetric[], extra: Partial<cloudwatch.GraphWidgetProps> = {}) =>
  new cloudwatch.GraphWidget({ title, left, width: 8, height: 6, ...extra });

function createDashboard(scope: Construct, props: DashboardProps): cloudwatch.Dashboard {
  const m: MetricOf = (name, dimensions, options = {}) =>
    deploymentMetric(props.deploymentName, name, options, dimensions);
  return new cloudwatch.Dashboard(scope, 'Dashboard', {
    dashboardName: `${props.deploymentName}-${Aws.REGION}`,
    defaultInterval: Duration.days(1),
    widgets: [
      [
        new cloudwatch.TextWidget({
          markdown:
            `# ${props.deploymentName}\nTerminations drained by graceful-node-termination. Saved queries: ` +
            `Logs Insights, \`${props.deploymentName}/\`. Runbook: docs/operations.md.`,
          width: 24,
          height: 2,
          // Said outright: aws-cdk-lib 2.275 (the oldest the package accepts) writes no background unless given.
          background: cloudwatch.TextWidgetBackground.TRANSPARENT,
        }),
      ],
      outcomeRow(props, m),
      waitRow(props),
      healthRow(props, m),
    ],
  });
}

/** What terminations ended as, and how long the drains took. */
function outcomeRow(props: DashboardProps, m: MetricOf): cloudwatch.IWidget[] {
  return [
    graph(
      'Terminations by outcome',
      // One search for every outcome (terminationOutcomes): a series each, a sixth of the template's bytes.
      [search(props.deploymentName, '"Terminations"', 'Sum')],
      { stacked: true, width: 12 },
    ),
    graph(
      'Drain duration (notification to release), seconds',
      ['p50', 'p99'].map((statistic) =>
        m('SecondsSinceNotification', terminating('drained'), { statistic, label: `drained ${statistic}` }),
      ),
      { width: 12 },
    ),
  ];
}

/** What held the drains up: evictions the API refused, and the settle waits after them. */
function waitRow(props: DashboardProps): cloudwatch.IWidget[] {
  return [
    new cloudwatch.LogQueryWidget({
      title: 'Evictions blocked, by cause',
      logGroupNames: [props.logGroup.logGroupName],
      queryLines: [
        `filter message in [${blockedMessages.map((s) => JSON.stringify(s)).join(', ')}]`,
        'stats count(*) as blocked by reason',
      ],
      view: cloudwatch.LogQueryVisualizationType.BAR,
      width: 12,
      height: 6,
    }),
    graph(
      'Settle waits after the drain, p99 seconds',
      [
        search(
          props.deploymentName,
          '("TargetDeregistrationSeconds" OR "VolumeDetachSeconds") Outcome="drained"',
          'p99',
        ),
      ],
      { width: 12 },
    ),
  ];
}

/** Retained instances, the reconciler's work and everything that went wrong. */
function healthRow(props: DashboardProps, m: MetricOf): cloudwatch.IWidget[] {
  const logMetric = (name: LogMessageMetric) => m(name, {}, { label: name });
  return [
    graph('Retained instances', [
      logMetric('InstancesRetained'),
      m('Terminations', terminating('retained'), { label: 'terminations retained' }),
    ]),
    graph(
      'Reconciler actions',
      ['StaleMarksRemoved', 'DrainsResumed', 'StaleTagsRemoved'].map((name) =>
        m(name, { Transition: 'reconcile', Outcome: 'reconciled' }, { label: name }),
      ),
    ),
    graph('Errors', [
      props.function.metricErrors({ period: Duration.minutes(5), statistic: 'Sum', label: 'function errors' }),
      props.failedNotifications.metricApproximateNumberOfMessagesVisible({
        statistic: 'Maximum',
        label: 'failed notifications',
      }),
      logMetric('DrainsTimedOut'),
      logMetric('LaunchesAbandoned'),
      logMetric('LaunchesUnchecked'),
    ]),
  ];
}
