// What the operator commands (check, upgrade) share: how they run, and to reach the cluster our Kubernetes
// client over the kubeconfig client-node loaded (exec plugins such as `aws eks get-token`
// included), and the nodes of a group's instances found as the drainer finds them.
import type { KubeConfig } from '@kubernetes/client-node';
import type { RequestOptions } from 'node:https';
import { createKubernetesGateway, type KubernetesGateway } from '../lambda/adapters/kubernetes/gateway.js';
import type { KubeEndpoint } from '../lambda/adapters/kubernetes/kube-http.js';
import { createNodeLookup } from '../lambda/cluster/node-lookup.js';
import type { InstanceDirectory } from '../lambda/shared/aws-ports.js';
import { systemClock } from '../lambda/shared/clock.js';
import type { Log } from '../lambda/shared/log.js';
import { exitCodes, UsageError } from './command-options.js';
import { AwsError, KubernetesError, rootCause } from './failure.js';

/**
 * Runs a command's main when its file is the entry point (npm run check, npm run upgrade); the
 * installed command (scripts/cli.ts) calls runCommand itself.
 */
export function runAsCommand(moduleUrl: string, name: string, main: (args: readonly string[]) => Promise<number>): void {
  // Bundled into the bin every module shares the bin's URL: there only cli.ts runs a command.
  if (moduleUrl.endsWith('.ts') && moduleUrl === `file://${process.argv[1]}`) runCommand(name, main, process.argv.slice(2));
}

/**
 * Exits with main's code. A failure is one line: bad usage (exit 2) says what was wrong and the
 * valid values; a failure met on the way (exit 1) names where (failure.ts). GNT_DEBUG=1 adds
 * the Error itself, stack and causes.
 */
export function runCommand(name: string, main: (args: readonly string[]) => Promise<number>, args: readonly string[]): void {
  main(args).then(
    (code) => process.exit(code),
    (error: unknown) => {
      const known = error instanceof UsageError || error instanceof KubernetesError || error instanceof AwsError;
      console.error(known ? `${name}: ${error.message}` : `${name} failed: ${rootCause(error)}`);
      if (process.env['GNT_DEBUG']) console.error(error);
      process.exit(error instanceof UsageError ? exitCodes.usage : exitCodes.failed);
    },
  );
}

/** Warnings and errors on stderr; the commands print their own progress. */
const quietLog: Log = { debug: () => {}, info: () => {}, warn: (m) => console.error(m), error: (m) => console.error(m) };

export function endpointFromKubeConfig(kc: KubeConfig): KubeEndpoint {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  return {
    server: cluster.server,
    requestOptions: async () => {
      const o: RequestOptions = {};
      await kc.applyToHTTPSOptions(o);
      return { ca: o.ca, cert: o.cert, key: o.key, rejectUnauthorized: o.rejectUnauthorized, headers: (o.headers ?? {}) as Record<string, string> };
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
export async function nodesOfInstances(instanceIds: readonly string[], kc: KubeConfig, directory: InstanceDirectory): Promise<string[]> {
  const found = await createNodeLookup(kubeconfigGateway(kc), directory, systemClock, quietLog).findNodesOfInstances(instanceIds);
  return [...found.values()].map((n) => n.name);
}
