// What the operator commands share to reach the cluster: our Kubernetes
// client over the kubeconfig client-node loaded (exec plugins such as `aws eks get-token`
// included), and the nodes of a group's instances found as the drainer finds them.
import type { KubeConfig } from '@kubernetes/client-node';
import type { RequestOptions } from 'node:https';
import { createKubernetesGateway, type KubernetesGateway } from '../lambda/adapters/kubernetes/gateway.js';
import type { KubeEndpoint } from '../lambda/adapters/kubernetes/kube-http.js';
import { createNodeLookup } from '../lambda/adapters/kubernetes/node-lookup.js';
import type { InstanceDirectory } from '../lambda/shared/aws-ports.js';
import { systemClock } from '../lambda/shared/clock.js';
import type { Log } from '../lambda/shared/log.js';

/** Warnings and errors on stderr; the commands print their own progress. */
const quietLog: Log = {
  debug: () => {},
  info: () => {},
  warn: (m) => console.error(m),
  error: (m) => console.error(m),
};

export function endpointFromKubeConfig(kc: KubeConfig): KubeEndpoint {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  return {
    server: cluster.server,
    requestOptions: async () => {
      const o: RequestOptions = {};
      await kc.applyToHTTPSOptions(o);
      return {
        ca: o.ca,
        cert: o.cert,
        key: o.key,
        rejectUnauthorized: o.rejectUnauthorized,
        headers: (o.headers ?? {}) as Record<string, string>,
      };
    },
  };
}

export function kubeconfigGateway(kc: KubeConfig): KubernetesGateway {
  return createKubernetesGateway(endpointFromKubeConfig(kc), { requestTimeoutMs: 15_000, log: quietLog });
}

/**
 * The node names of these instances, found as the drainer finds them: under their EC2 names
 * with the providerID checked (a GET each), the rest by one scan of the node list.
 */
export async function nodesOfInstances(
  instanceIds: readonly string[],
  kc: KubeConfig,
  directory: InstanceDirectory,
): Promise<string[]> {
  return [...(await nodeNamesOfInstances(instanceIds, kc, directory)).values()];
}

/** The same, as instance id -> node name. */
export async function nodeNamesOfInstances(
  instanceIds: readonly string[],
  kc: KubeConfig,
  directory: InstanceDirectory,
): Promise<Map<string, string>> {
  const found = await createNodeLookup(kubeconfigGateway(kc), directory, systemClock, quietLog).findNodesOfInstances(
    instanceIds,
  );
  return new Map([...found].map(([id, n]) => [id, n.name]));
}
