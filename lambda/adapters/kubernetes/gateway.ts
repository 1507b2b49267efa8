// The Kubernetes adapter: one HTTP client shared by the node, pod and Event APIs. The node
// lookup (node-lookup.ts) is composed on top of it by the runtime.
import type { ClusterGateway } from '../../cluster/ports/cluster-gateway.js';
import type { NodeLookup } from './node-lookup.js';
import type { Log } from '../../shared/log.js';
import { createChoiceApi } from './choice-api.js';
import { createOutOfServiceApi } from './out-of-service-api.js';
import { createConditionsApi } from './node-conditions-api.js';
import { createDeploymentApi } from './deployment-api.js';
import { createDrainRecordApi } from './drain-record-api.js';
import { createDrainabilityApi } from './drainability.js';
import { createEventWriter } from './event-writer.js';
import { createKubeHttp, type KubeEndpoint } from './kube-http.js';
import { createLoadBalancerSources } from './load-balancer-api.js';
import { createNodeApi, type NodeApi } from './node-api.js';
import { reportingComponent } from './object-codecs.js';
import { createMigrationNodeApi } from './migration-node-api.js';
import { createOutdatedNodeApi } from './outdated-node-api.js';
import { createPodApi } from './pod-api.js';
import { createRepairNodeApi } from './repair-node-api.js';
import { createTargetReadingApi } from './target-reading-api.js';
import { createVolumeApi } from './volume-api.js';

/** Shows in the API server's audit log, as EKS's own drainer shows as vpcLambda. */
export const userAgent = `${reportingComponent}/0.3`;

export interface KubernetesOptions {
  /** Every request is aborted after this long (watches excepted: they idle-timeout). */
  readonly requestTimeoutMs: number;
  readonly log: Log;
}

/** Everything but the lookup, which needs EC2 too: the runtime composes it from NodeApi. */
export type KubernetesGateway = Omit<ClusterGateway, keyof NodeLookup> & NodeApi;

export function createKubernetesGateway(
  endpoint: KubeEndpoint,
  options: KubernetesOptions,
): KubernetesGateway & Required<Pick<ClusterGateway, 'flush'>> {
  const kube = createKubeHttp(endpoint, {
    userAgent,
    timeoutMs: options.requestTimeoutMs,
    onRetry: (what, attempt, error, delayMs) =>
      options.log.info('retrying Kubernetes request', { request: what, attempt, error, delayMs }),
  });
  return {
    ...createNodeApi(kube, options.log),
    ...createDrainRecordApi(kube),
    ...createOutdatedNodeApi(kube),
    ...createRepairNodeApi(kube),
    ...createMigrationNodeApi(kube),
    ...createPodApi(kube, options.log),
    ...createVolumeApi(kube, options.log),
    ...createLoadBalancerSources(kube),
    ...createDrainabilityApi(kube),
    ...createChoiceApi(kube),
    ...createOutOfServiceApi(kube),
    ...createConditionsApi(kube),
    ...createDeploymentApi(kube),
    ...createEventWriter(kube, options.log),
    targetReadings: (deployment) =>
      createTargetReadingApi(kube, { namespace: deployment, owner: deployment, log: options.log }),
  };
}
