// The composition root: builds the handler from an environment. Configuration is parsed and
// validated once, clients are built once, the cluster connection is made on first need and
// kept for the container's life. lambda/index.ts calls it at cold start; the demo, the bench
// and the tests call it directly.
import { Logger } from '@aws-lambda-powertools/logger';
import { AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import { EKSClient } from '@aws-sdk/client-eks';
import { createAutoScalingInstances, createLifecycleActions } from './adapters/aws/auto-scaling.js';
import { AwsCallCount, patient } from './adapters/aws/aws-patience.js';
import { AwsQuery } from './adapters/aws/aws-query.js';
import { createEc2Instances } from './adapters/aws/ec2-instances.js';
import { autoScalingApi, type QueryCaller } from './adapters/aws/group-reads.js';
import { createInstanceRepairs } from './adapters/aws/instance-repairs.js';
import { connectToEks } from './adapters/aws/eks-connection.js';
import { createEmfMetrics } from './adapters/aws/emf-metrics.js';
import { createLoadBalancerTargets } from './adapters/aws/load-balancers.js';
import { createSnsHandOffs } from './adapters/aws/sns-hand-offs.js';
import { createKubernetesGateway } from './adapters/kubernetes/gateway.js';
import type { KubeEndpoint } from './adapters/kubernetes/kube-http.js';
import type { ClusterGateway } from './cluster/ports/cluster-gateway.js';
import { createNodeLookup } from './adapters/kubernetes/node-lookup.js';
import { createRouter, type HandlerResult, type InvocationContext, type RouterDeps } from './router.js';
import type { ChoiceAnswer } from './termination-policy/answer.js';
import type { InstanceDirectory, InstanceRepairs, LoadBalancerTargets } from './shared/aws-ports.js';
import { systemClock } from './shared/clock.js';
import { parseConfig, type Config } from './shared/config.js';

export type LambdaHandler = (event: unknown, context: InvocationContext) => Promise<HandlerResult | ChoiceAnswer>;
export type { HandlerResult, InvocationContext };

/** What tests put in place of an AWS service that has no local stand-in in their harness. */
export interface RuntimeOverrides {
  readonly instanceDirectory?: InstanceDirectory;
  /** EC2's reboot (the cluster suite has no EC2 stand-in); Auto Scaling's calls stay the SDK's. */
  readonly reboot?: InstanceRepairs['reboot'];
  /** Auto Scaling's Query answers to the lean group reads (group-reads.ts), where no endpoint serves them. */
  readonly autoScalingQuery?: QueryCaller;
}

export function createRuntime(
  env: Readonly<Record<string, string | undefined>>,
  overrides: RuntimeOverrides = {},
): LambdaHandler {
  const config = parseConfig(env);
  // The deployment's name (the construct sets it): log lines and metrics of two deployments
  // on one account never mix (the metric filters and EMF both key on it).
  const serviceName = env['POWERTOOLS_SERVICE_NAME'] ?? config.deploymentName;
  const logger = new Logger({ serviceName });
  const aws = createAwsPorts(env, config, overrides);
  const cluster = connectOnce(async () => {
    const endpoint =
      config.kubeconfigPath !== undefined
        ? await connectWithKubeconfig(config)
        : await connectToEks({ clusterName: config.clusterName, region: aws.region, eks: aws.eks });
    const kubernetes = createKubernetesGateway(endpoint, { requestTimeoutMs: 15_000, log: logger });
    return { ...kubernetes, ...createNodeLookup(kubernetes, aws.ports.ec2, systemClock, logger) };
  });
  const metrics = createEmfMetrics(serviceName, logger);
  const route = createRouter({ config, log: logger, clock: systemClock, ...aws.ports, cluster, metrics });
  return async (event, context) => {
    logger.addContext(context as Parameters<Logger['addContext']>[0]);
    try {
      return await route(event, context);
    } finally {
      // The EMF lines must be written before the invocation ends.
      await metrics.ready();
    }
  };
}

type AwsPorts = Pick<
  RouterDeps,
  'lifecycle' | 'instances' | 'repairs' | 'awsCalls' | 'ec2' | 'handOffs' | 'loadBalancers'
>;

/** Every AWS port the triggers use, counted per record and patient with throttling (aws-patience.ts). */
function createAwsPorts(
  env: Readonly<Record<string, string | undefined>>,
  config: Config,
  overrides: RuntimeOverrides,
): { readonly region: string; readonly eks: EKSClient; readonly ports: AwsPorts } {
  const region = env['AWS_REGION'] ?? env['AWS_DEFAULT_REGION'] ?? 'us-east-1';
  // Each request is bounded; the SDK's standard retry mode (capped exponential backoff with
  // jitter, throttling-aware) gets 5 attempts instead of 3. The SDK reads
  // AWS_ENDPOINT_URL_<SERVICE> itself; EC2's own client (ec2-instances.ts) is given it.
  const sdk = { region, requestHandler: { requestTimeout: 10_000, connectionTimeout: 3_000 }, maxAttempts: 5 };
  // The SDK reads AWS_ENDPOINT_URL_<SERVICE> from process.env; an environment given here
  // (tests, the demo) is honoured the same way.
  const endpointOf = (service: string) => {
    const url = env[`AWS_ENDPOINT_URL_${service}`] ?? env['AWS_ENDPOINT_URL'];
    return url ? { endpoint: url } : {};
  };
  // Auto Scaling's one bucket stays empty for seconds in a wave: no quick retry, aws-patience.ts's.
  const autoScaling = new AutoScalingClient({ ...sdk, maxAttempts: 1, ...endpointOf('AUTO_SCALING') });
  const awsCalls = new AwsCallCount();
  const patiently = <T extends object>(port: T, service: string, patienceMs?: number): T =>
    patient(port, service, { clock: systemClock, count: awsCalls, patienceMs });
  // EC2's private DNS names (a node lookup is one GET, node-lookup.ts): a quarter of the
  // patience (a Spot warning has two minutes).
  const ec2Endpoint = env['AWS_ENDPOINT_URL_EC2'] ?? env['AWS_ENDPOINT_URL'];
  const credentials = autoScaling.config.credentials;
  // DescribeAutoScalingGroups read lean (group-reads.ts): one attempt, as the client's.
  const groups =
    overrides.autoScalingQuery ??
    new AwsQuery(autoScalingApi, {
      region,
      credentials,
      endpoint: env['AWS_ENDPOINT_URL_AUTO_SCALING'] ?? env['AWS_ENDPOINT_URL'],
      timeoutMs: 10_000,
      maxAttempts: 1,
    });
  const ec2 = patiently(
    overrides.instanceDirectory ?? createEc2Instances({ region, credentials, endpoint: ec2Endpoint }),
    'ec2',
    15_000,
  );
  const ports: AwsPorts = {
    lifecycle: patiently(createLifecycleActions(autoScaling), 'autoscaling'),
    instances: patiently(createAutoScalingInstances(autoScaling, groups, ec2), 'autoscaling'),
    repairs:
      config.repair !== undefined
        ? patiently(repairsOf(autoScaling, groups, { env, region }, overrides), 'autoscaling')
        : undefined,
    awsCalls: () => awsCalls.take(),
    ec2,
    handOffs:
      config.handOffTopicArn !== undefined
        ? createSnsHandOffs({ ...sdk, ...endpointOf('SNS') }, config.handOffTopicArn)
        : undefined,
    loadBalancers: config.waitForTargets ? loadBalancersOf(config, env, region, credentials) : undefined,
  };
  return { region, eks: new EKSClient({ ...sdk, ...endpointOf('EKS') }), ports };
}

/** Node auto repair's Auto Scaling and EC2 calls (REPAIR). */
function repairsOf(
  autoScaling: AutoScalingClient,
  groups: QueryCaller,
  { env, region }: { readonly env: Readonly<Record<string, string | undefined>>; readonly region: string },
  overrides: RuntimeOverrides,
): InstanceRepairs {
  const repairs = createInstanceRepairs(autoScaling, groups, {
    region,
    credentials: autoScaling.config.credentials,
    endpoint: env['AWS_ENDPOINT_URL_EC2'] ?? env['AWS_ENDPOINT_URL'],
  });
  return overrides.reboot !== undefined ? { ...repairs, reboot: overrides.reboot } : repairs;
}

/** The cluster's load balancers, read when the settle phase waits for them (WAIT_FOR_TARGETS). */
function loadBalancersOf(
  config: Config,
  env: Readonly<Record<string, string | undefined>>,
  region: string,
  credentials: AutoScalingClient['config']['credentials'],
): LoadBalancerTargets {
  return createLoadBalancerTargets({
    region,
    credentials,
    clusterName: config.clusterName,
    // The account-wide tag scan only when the deployer names tags (load balancers other tools made).
    tagScan: config.loadBalancerTags !== undefined ? { extraTags: config.loadBalancerTags } : undefined,
    endpoints: {
      v2: env['AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2'] ?? env['AWS_ENDPOINT_URL'],
      classic: env['AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING'] ?? env['AWS_ENDPOINT_URL'],
    },
    // Short: an unreachable endpoint falls back to the fixed delay, which runs meanwhile; a
    // reading must fit settle-targets.ts's readBudgetMs (a Spot interruption's 13 s too).
    timeoutMs: 3_000,
    maxAttempts: 2,
  });
}

/** Connects on first use; a failed connection is not kept, so the next record or retry tries again. */
function connectOnce(connect: () => Promise<ClusterGateway>): () => Promise<ClusterGateway> {
  let gateway: Promise<ClusterGateway> | undefined;
  return () => {
    gateway ??= connect();
    gateway.catch(() => (gateway = undefined));
    return gateway;
  };
}

/**
 * An explicitly configured kubeconfig (tests, the demo, clusters outside EKS). Imported
 * lazily: EKS deployments never load the reader or its YAML parser.
 */
async function connectWithKubeconfig(config: Config): Promise<KubeEndpoint> {
  const { loadKubeconfig } = await import('./adapters/kubernetes/kubeconfig.js');
  return loadKubeconfig(config.kubeconfigPath!, config.kubeconfigContext);
}
