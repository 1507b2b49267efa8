// Where the cluster is and how to authenticate: EKS (DescribeCluster + a minted token) in
// production, or an explicitly configured kubeconfig for tests, the demo and non-EKS clusters.
import { DescribeClusterCommand, type EKSClient } from '@aws-sdk/client-eks';
import { TransientError } from '../errors.js';
import { EksTokenSource } from './eks-token.js';
import type { KubeEndpoint } from './kube-http.js';

export interface EksConnectionOptions {
  readonly clusterName: string;
  readonly region: string;
  readonly eks: EKSClient;
}

/** Endpoint and CA come from eks:DescribeCluster (once); the token is minted and refreshed per request. */
export async function connectToEks(options: EksConnectionOptions): Promise<KubeEndpoint> {
  let cluster;
  try {
    ({ cluster } = await options.eks.send(new DescribeClusterCommand({ name: options.clusterName })));
  } catch (error) {
    throw new TransientError(`eks:DescribeCluster ${options.clusterName} failed: ${(error as Error).message}`, { cause: error });
  }
  const endpoint = cluster?.endpoint;
  const caData = cluster?.certificateAuthority?.data;
  if (!endpoint || !caData) {
    throw new TransientError(`eks:DescribeCluster ${options.clusterName} returned no endpoint or CA (status ${cluster?.status ?? 'unknown'})`);
  }
  const ca = Buffer.from(caData, 'base64');
  const tokens = new EksTokenSource({ clusterName: options.clusterName, region: options.region, credentials: options.eks.config.credentials });
  return {
    server: endpoint,
    // Runs before every request, so a container that lives for hours never sends an expired token.
    requestOptions: async () => ({ ca, headers: { Authorization: `Bearer ${await tokens.token()}` } }),
    refreshCredentials: () => tokens.invalidate(),
  };
}

/**
 * An explicitly configured kubeconfig (see kubeconfig.ts for what it may contain). Imported
 * lazily: EKS deployments never load the reader or its YAML parser.
 */
export async function connectWithKubeconfig(path: string, context: string | undefined): Promise<KubeEndpoint> {
  const { loadKubeconfig } = await import('./kubeconfig.js');
  return loadKubeconfig(path, context);
}
