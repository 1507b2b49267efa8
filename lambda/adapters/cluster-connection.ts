// Where the cluster is and how to authenticate: EKS (DescribeCluster + a minted token) in
// production, or an explicitly configured kubeconfig for tests, the demo and non-EKS clusters.
import { DescribeClusterCommand, type EKSClient } from '@aws-sdk/client-eks';
import { TransientError } from '../errors.js';
import { EksTokenSource } from './eks-token.js';
import type { KubeEndpoint, TlsAndHeaders } from './kube-http.js';

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
  };
}

/**
 * Uses @kubernetes/client-node's kubeconfig loader (every auth method it knows). Imported
 * lazily: EKS deployments never load it, which keeps it out of their cold start.
 */
export async function connectWithKubeconfig(path: string, context: string | undefined): Promise<KubeEndpoint> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  if (context !== undefined) {
    if (!kc.getContextObject(context)) throw new Error(`KUBECONFIG_CONTEXT ${context} is not in ${path}`);
    kc.setCurrentContext(context);
  }
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error(`kubeconfig ${path} has no current cluster`);
  return {
    server,
    requestOptions: async () => {
      const opts: Record<string, unknown> & { headers?: Record<string, string> } = {};
      await kc.applyToHTTPSOptions(opts);
      const { ca, cert, key, rejectUnauthorized, servername, headers } = opts as TlsAndHeaders;
      return { ca, cert, key, rejectUnauthorized, servername, headers: { ...headers } };
    },
  };
}
