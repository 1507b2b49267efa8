// Builds the handler from an environment: configuration parsed and validated once,
// clients built once, the cluster connection made on first need and kept for the
// container's life. lambda/index.ts calls it at cold start; tests call it directly.
import { Logger } from '@aws-lambda-powertools/logger';
import { AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import { EKSClient } from '@aws-sdk/client-eks';
import { createAutoScalingInstances, createLifecycleActions } from './adapters/auto-scaling.js';
import { connectToEks, connectWithKubeconfig } from './adapters/cluster-connection.js';
import { createEc2Instances } from './adapters/ec2-instances.js';
import { createKubernetesGateway } from './adapters/kubernetes.js';
import { createNodeLookup } from './node-lookup.js';
import type { InstanceDirectory } from './ports.js';
import { createSnsHandOffs } from './adapters/sns-hand-offs.js';
import { createEmfMetrics } from './adapters/emf-metrics.js';
import { systemClock } from './clock.js';
import { parseConfig } from './config.js';
import { createHandler, type ClusterGateway, type HandlerResult, type InvocationContext } from './handler.js';

export type LambdaHandler = (event: unknown, context: InvocationContext) => Promise<HandlerResult>;

/** What tests put in place of an AWS service that has no local stand-in in their harness. */
export interface RuntimeOverrides {
  readonly instanceDirectory?: InstanceDirectory;
}

export function createRuntime(env: Readonly<Record<string, string | undefined>>, overrides: RuntimeOverrides = {}): LambdaHandler {
  // The deployment's name (the construct sets it): log lines and metrics of two deployments
  // on one account never mix (the metric filters and EMF both key on it).
  const serviceName = env['POWERTOOLS_SERVICE_NAME'] ?? 'graceful-node-termination';
  const logger = new Logger({ serviceName });
  const config = parseConfig(env);
  const region = env['AWS_REGION'] ?? env['AWS_DEFAULT_REGION'] ?? 'us-east-1';
  // Each request is bounded; the SDK's standard retry mode (capped exponential backoff with
  // jitter, throttling-aware) gets 5 attempts instead of 3.
  const requestHandler = { requestTimeout: 10_000, connectionTimeout: 3_000 };
  const sdk = { region, requestHandler, maxAttempts: 5 };
  const autoScaling = new AutoScalingClient(sdk);
  const eks = new EKSClient(sdk);
  // EC2's private DNS names: the node's name on EKS, so a lookup is one GET (node-lookup.ts).
  const instanceDirectory =
    overrides.instanceDirectory ?? createEc2Instances({ region, credentials: autoScaling.config.credentials, endpoint: env['AWS_ENDPOINT_URL_EC2'] });

  let gateway: Promise<ClusterGateway> | undefined;
  const cluster = (): Promise<ClusterGateway> => {
    gateway ??= (async () => {
      const endpoint =
        config.kubeconfigPath !== undefined
          ? await connectWithKubeconfig(config.kubeconfigPath, config.kubeconfigContext)
          : await connectToEks({ clusterName: config.clusterName, region, eks });
      const kubernetes = createKubernetesGateway(endpoint, { requestTimeoutMs: 15_000, log: logger });
      return { ...kubernetes, ...createNodeLookup(kubernetes, instanceDirectory, systemClock, logger) };
    })();
    // A failed connection is not kept: the next record or retry tries again.
    gateway.catch(() => (gateway = undefined));
    return gateway;
  };

  const handOffs = config.handOffTopicArn !== undefined ? createSnsHandOffs(sdk, config.handOffTopicArn) : undefined;
  const metrics = createEmfMetrics(serviceName);
  const handle = createHandler({
    config,
    log: logger,
    clock: systemClock,
    lifecycle: createLifecycleActions(autoScaling),
    instances: createAutoScalingInstances(autoScaling, instanceDirectory),
    cluster,
    handOffs,
    metrics,
  });
  return async (event, context) => {
    logger.addContext(context as Parameters<Logger['addContext']>[0]);
    try {
      return await handle(event, context);
    } finally {
      // The EMF lines must be written before the invocation ends.
      await metrics.ready();
    }
  };
}
