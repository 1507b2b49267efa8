// Where an EKS cluster is and how to authenticate to it: DescribeCluster once, and a token
// minted (no network call) and refreshed per request.
import { DescribeClusterCommand, type EKSClient } from '@aws-sdk/client-eks';
import { TransientError } from '../../shared/errors.js';
import { EksTokenSource } from './eks-token.js';
import type { KubeEndpoint } from '../kubernetes/kube-http.js';

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
    throw new TransientError(`eks:DescribeCluster ${options.clusterName} failed: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const endpoint = cluster?.endpoint;
  const caData = cluster?.certificateAuthority?.data;
  if (!endpoint || !caData) {
    throw new TransientError(
      `eks:DescribeCluster ${options.clusterName} returned no endpoint or CA (status ${cluster?.status ?? 'unknown'})`,
    );
  }
  const ca = Buffer.from(caData, 'base64');
  const tokens = new EksTokenSource({
    clusterName: options.clusterName,
    region: options.region,
    credentials: options.eks.config.credentials,
  });
  return {
    server: endpoint,
    // Runs before every request, so a container that lives for hours never sends an expired token.
    requestOptions: async () => ({ ca, headers: { Authorization: `Bearer ${await tokens.token()}` } }),
    refreshCredentials: () => tokens.invalidate(),
  };
}
