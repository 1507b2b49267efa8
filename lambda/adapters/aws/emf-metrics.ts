// Metrics as CloudWatch Embedded Metric Format log lines (Powertools Metrics): no API call,
// no extra permission; CloudWatch extracts them from the function's log group.
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
import type { MetricsSink } from '../../shared/aws-ports.js';
import { metricsNamespace } from '../../shared/config.js';
import { asError, type Log } from '../../shared/log.js';

type PowertoolsMetrics = typeof import('@aws-lambda-powertools/metrics');

/**
 * Loaded on the first data point, after the work it measures, so the library stays out of
 * the cold start. `emit` returns once the line is written.
 */
export function createEmfMetrics(
  serviceName: string,
  log: Pick<Log, 'warn'>,
): MetricsSink & { ready(): Promise<void> } {
  let library: Promise<PowertoolsMetrics> | undefined;
  let pending: Promise<void> = Promise.resolve();
  return {
    emit(dimensions, values) {
      library ??= import('@aws-lambda-powertools/metrics');
      pending = pending
        .then(async () => {
          const { Metrics, MetricUnit } = await library!;
          // One instance per data point set: dimensions differ from record to record.
          const metrics = new Metrics({ namespace: metricsNamespace, serviceName });
          for (const [name, value] of Object.entries(dimensions)) metrics.addDimension(name, value);
          for (const [name, { unit, value }] of Object.entries(values)) {
            metrics.addMetric(name, unit === 'Seconds' ? MetricUnit.Seconds : MetricUnit.Count, value);
          }
          metrics.publishStoredMetrics();
        })
        .catch((error: unknown) => {
          // A metric must never fail the invocation (that would retry a finished drain).
          log.warn('could not write metrics', { error: asError(error) });
        });
    },
    ready: () => pending,
  };
}
