// The construct's metric methods, the alarms built on them, and where the alarms are sent.
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { Duration, aws_cloudwatch as cloudwatch } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { DeadlinePolicy, type GracefulNodeTermination } from '../../infra/graceful-node-termination.js';
import { metricsNamespace } from '../../lambda/shared/config.js';
import { resourceNamed, resourcesOf, stackWith, type Resources } from './fixtures.js';

type MetricMethod =
  'metricDrainsTimedOut' | 'metricLaunchesUnchecked' | 'metricLaunchesAbandoned' | 'metricInstancesRetained';
const logMetrics: [MetricMethod, string][] = [
  ['metricDrainsTimedOut', 'DrainsTimedOut'],
  ['metricLaunchesUnchecked', 'LaunchesUnchecked'],
  ['metricLaunchesAbandoned', 'LaunchesAbandoned'],
  ['metricInstancesRetained', 'InstancesRetained'],
];

function alarmNamed(resources: Resources, construct: GracefulNodeTermination, id: string) {
  return Object.values(resources).find(
    (r) => r.Type === 'AWS::CloudWatch::Alarm' && r.Properties['AlarmName'] === `${construct.deploymentName}-${id}`,
  )!;
}

// The first synthesis in a worker bundles the Lambda (esbuild): give it room under load.
describe('the metrics and alarms', { timeout: 120_000 }, () => {
  it('offers each counted log line as a metric: the sum over 5 minutes, of this deployment only, options like metricErrors()', () => {
    const { construct } = stackWith({});
    for (const [method, metricName] of logMetrics) {
      const metric = construct[method]();
      expect(metric).toMatchObject({
        namespace: metricsNamespace,
        metricName,
        dimensions: { service: construct.deploymentName },
        statistic: 'Sum',
      });
      expect(metric.period.toSeconds()).toBe(300);
      const custom = construct[method]({
        period: Duration.minutes(1),
        statistic: cloudwatch.Stats.MAXIMUM,
        label: 'mine',
      });
      expect(custom).toMatchObject({
        metricName,
        statistic: 'Maximum',
        label: 'mine',
        dimensions: { service: construct.deploymentName },
      });
      expect(custom.period.toSeconds()).toBe(60);
    }
  });

  it('alarms on exactly those metrics, which the metric filters write', () => {
    const { stack, construct } = stackWith({ deadlinePolicy: DeadlinePolicy.RETAIN, retentionSetOutside: true });
    const resources = resourcesOf(stack);
    for (const [method, metricName] of logMetrics) {
      const metric = construct[method]();
      expect(alarmNamed(resources, construct, metricName).Properties).toMatchObject({
        Namespace: metric.namespace,
        MetricName: metric.metricName,
        Dimensions: [{ Name: 'service', Value: construct.deploymentName }],
        Statistic: metric.statistic,
        Period: metric.period.toSeconds(),
      });
      const [, filter] = resourceNamed(resources, `Gnt${metricName}Filter`);
      expect(filter.Properties['MetricTransformations']).toEqual([
        {
          MetricNamespace: metric.namespace,
          MetricName: metric.metricName,
          MetricValue: '1',
          Dimensions: [{ Key: 'service', Value: '$.service' }],
        },
      ]);
    }
  });

  it("names StaleMarksRemoved by the dimensions Powertools writes on the reconciler's EMF line", () => {
    const { construct } = stackWith({});
    const metric = construct.metricStaleMarksRemoved();
    // What lambda/reconcile/reconcile-schedule.ts emits through adapters/aws/emf-metrics.ts.
    const powertools = new Metrics({ namespace: metricsNamespace, serviceName: construct.deploymentName });
    powertools.addDimension('Transition', 'reconcile');
    powertools.addDimension('Outcome', 'reconciled');
    powertools.addMetric('StaleMarksRemoved', MetricUnit.Count, 1);
    const line = powertools.serializeMetrics() as unknown as Record<string, string> & {
      _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] }[] };
    };
    const [directive] = line._aws.CloudWatchMetrics;
    expect(directive!.Namespace).toBe(metric.namespace);
    expect(directive!.Metrics.map((m) => m.Name)).toEqual([metric.metricName]);
    expect([...directive!.Dimensions[0]!].sort()).toEqual(Object.keys(metric.dimensions!).sort());
    for (const [name, value] of Object.entries(metric.dimensions!)) expect(line[name]).toBe(value);
    expect(metric.statistic).toBe('Sum');
  });

  it("lets CloudWatch use the key for the alarm topic only for this account's alarms of this deployment (confused deputy)", () => {
    const { stack, construct } = stackWith({ alarmEmail: 'oncall@example.com' });
    const [, key] = resourceNamed(resourcesOf(stack), /^GntKey[0-9A-F]{8}$/);
    const grants = (
      key.Properties['KeyPolicy'] as { Statement: { Principal?: { Service?: string } }[] }
    ).Statement.filter((s) => s.Principal?.Service === 'cloudwatch.amazonaws.com');
    expect(grants).toEqual([
      {
        Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        Effect: 'Allow',
        Principal: { Service: 'cloudwatch.amazonaws.com' },
        Resource: '*',
        Condition: {
          StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
          ArnLike: {
            'aws:SourceArn': {
              'Fn::Join': [
                '',
                [
                  'arn:',
                  { Ref: 'AWS::Partition' },
                  ':cloudwatch:',
                  { Ref: 'AWS::Region' },
                  ':',
                  { Ref: 'AWS::AccountId' },
                  `:alarm:${construct.deploymentName}-*`,
                ],
              ],
            },
          },
        },
      },
    ]);
  });
});
