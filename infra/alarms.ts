// The alarms: function errors, failed notifications, and the log lines that must never happen
// quietly (drains that hit their deadline, launches unchecked or abandoned, retained instances),
// with the metric filters that count those lines, and where the alarms are sent.
import {
  ArnFormat,
  Duration,
  Stack,
  aws_cloudwatch as cloudwatch,
  aws_cloudwatch_actions as cloudwatchActions,
  aws_iam as iam,
  aws_kms as kms,
  aws_lambda as lambda,
  aws_logs as logs,
  aws_sns as sns,
  aws_sns_subscriptions as subscriptions,
  aws_sqs as sqs,
} from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { DeadlinePolicy, metricsNamespace } from '../lambda/shared/config.js';
import { alarmDescription, type AlarmId } from './alarm-texts.js';
import { keepParentLogicalIds } from './logical-ids.js';
import { runbookAnchor } from './runbook.js';
import { deploymentMetric, logMessageMetrics, type LogMessageMetric } from './metrics.js';

/** The construct's public metric methods the alarms watch. */
export interface DeploymentMetrics {
  metricDrainsTimedOut(options?: cloudwatch.MetricOptions): cloudwatch.Metric;
  metricLaunchesUnchecked(options?: cloudwatch.MetricOptions): cloudwatch.Metric;
  metricLaunchesAbandoned(options?: cloudwatch.MetricOptions): cloudwatch.Metric;
  metricInstancesRetained(options?: cloudwatch.MetricOptions): cloudwatch.Metric;
}

export interface AlarmsProps {
  /** Names the alarms (`<deploymentName>-<alarm>`) and is the `service` the filters count. */
  readonly deploymentName: string;
  readonly deadlinePolicy: DeadlinePolicy;
  /** Node auto repair is on: its storm control alarms. */
  readonly repair?: boolean;
  readonly logGroup: logs.ILogGroup;
  readonly function: lambda.IFunction;
  readonly failedNotifications: sqs.IQueue;
  readonly metrics: DeploymentMetrics;
  /**
   * Where alarms go.
   * @default - the topic alarmEmail creates, else nowhere
   */
  readonly alarmTopic?: sns.ITopic;
  /**
   * Creates an encrypted alarm topic with this email subscription, when alarmTopic is not given.
   * @default - no topic
   */
  readonly alarmEmail?: string;
  /** Encrypts the alarm topic this creates. */
  readonly key: kms.IKey;
  /**
   * Each alarm's description, after its first steps, links to `<runbookUrl>#alarm-<name, lowercase>`.
   * @default - no link
   */
  readonly runbookUrl?: string;
}

export { runbookAnchor };

export class Alarms extends Construct {
  /** In the order: function errors, failed notifications, then the log-line alarms. */
  readonly alarms: readonly cloudwatch.Alarm[];
  /** Where the alarms are sent; undefined: nowhere. */
  readonly topic: sns.ITopic | undefined;

  constructor(
    scope: Construct,
    id: string,
    private readonly props: AlarmsProps,
  ) {
    super(scope, id);
    keepParentLogicalIds(this);
    const counted: LogMessageMetric[] = ['DrainsTimedOut', 'LaunchesUnchecked', 'LaunchesAbandoned'];
    if (props.deadlinePolicy === DeadlinePolicy.RETAIN) counted.push('InstancesRetained');
    for (const metricName of counted) this.countLogMessage(metricName);
    const m = props.metrics;
    const fiveMinutes = Duration.minutes(5);
    this.alarms = [
      this.alarm('FunctionErrors', props.function.metricErrors({ period: fiveMinutes, statistic: 'Sum' })),
      this.alarm(
        'FailedNotificationsVisible',
        props.failedNotifications.metricApproximateNumberOfMessagesVisible({
          period: fiveMinutes,
          statistic: 'Maximum',
        }),
      ),
      this.alarm('DrainsTimedOut', m.metricDrainsTimedOut()),
      this.alarm('LaunchesUnchecked', m.metricLaunchesUnchecked()),
      this.alarm('LaunchesAbandoned', m.metricLaunchesAbandoned()),
      ...this.optionalAlarms(),
    ];
    this.topic =
      props.alarmTopic ?? (props.alarmEmail !== undefined ? this.createEmailTopic(props.alarmEmail) : undefined);
    if (this.topic) {
      // OK too: a page that resolved itself says so.
      const action = new cloudwatchActions.SnsAction(this.topic);
      for (const alarm of this.alarms) {
        alarm.addAlarmAction(action);
        alarm.addOkAction(action);
      }
    }
  }

  /** The alarms of what is optional: retained instances (DeadlinePolicy.RETAIN), repairs held (repair). */
  private optionalAlarms(): cloudwatch.Alarm[] {
    const { props } = this;
    const m = props.metrics;
    return [
      ...(props.deadlinePolicy === DeadlinePolicy.RETAIN
        ? [this.alarm('InstancesRetained', m.metricInstancesRetained())]
        : []),
      ...(props.repair
        ? [
            // The storm metric itself (EMF, one data point per repair pass).
            this.alarm(
              'RepairsHeld',
              deploymentMetric(props.deploymentName, 'RepairStorms', {}, { Transition: 'repair', Outcome: 'judged' }),
            ),
          ]
        : []),
    ];
  }

  /** Counts one exact log message (Powertools JSON) as a metric, by the line's `service`. */
  private countLogMessage(metricName: LogMessageMetric): void {
    new logs.MetricFilter(this, `${metricName}Filter`, {
      logGroup: this.props.logGroup,
      filterPattern: logs.FilterPattern.stringValue('$.message', '=', logMessageMetrics[metricName]),
      metricNamespace: metricsNamespace,
      metricName,
      metricValue: '1',
      dimensions: { service: '$.service' },
    });
  }

  /**
   * Fires on the first occurrence: none of these should ever happen quietly. Named after the
   * deployment: `upgrade` puts DrainsTimedOut and LaunchesAbandoned in the instance refresh's
   * alarm specification by these names.
   */
  private alarm(id: AlarmId, metric: cloudwatch.IMetric): cloudwatch.Alarm {
    return new cloudwatch.Alarm(this, id, {
      alarmName: `${this.props.deploymentName}-${id}`,
      alarmDescription: alarmDescription(id, this.props.runbookUrl),
      metric,
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  }

  /** An encrypted topic for the alarms, with one email subscription. */
  private createEmailTopic(email: string): sns.Topic {
    const { key, deploymentName } = this.props;
    const topic = new sns.Topic(this, 'AlarmTopic', {
      masterKey: key,
      enforceSSL: true,
      displayName: 'Graceful node termination alarms',
    });
    topic.addSubscription(new subscriptions.EmailSubscription(email));
    // CloudWatch publishes the alarms, so it must be able to use the key: only for this
    // account's alarms of this deployment (confused-deputy guard).
    // https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Cross-service-confused-deputy-prevention.html
    const stack = Stack.of(this);
    const ourAlarms = stack.formatArn({
      service: 'cloudwatch',
      resource: 'alarm',
      resourceName: `${deploymentName}-*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    key.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: { StringEquals: { 'aws:SourceAccount': stack.account }, ArnLike: { 'aws:SourceArn': ourAlarms } },
      }),
    );
    // The topic policy (enforceSSL makes one) replaces SNS's default policy, which is what let
    // CloudWatch publish: allow it again, for this account's alarms only.
    // https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Notify_Users_Alarm_Changes.html
    const accountAlarms = stack.formatArn({
      service: 'cloudwatch',
      resource: 'alarm',
      resourceName: '*',
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    topic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'AllowCloudWatchAlarms',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: {
          StringEquals: { 'aws:SourceAccount': stack.account },
          ArnLike: { 'aws:SourceArn': accountAlarms },
        },
      }),
    );
    return topic;
  }
}
