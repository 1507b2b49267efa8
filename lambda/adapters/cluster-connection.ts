// Where the cluster is and how to authenticate: EKS (DescribeCluster + a minted token) in
// production, or an explicitly configured kubeconfig for tests, the demo and non-EKS clusters.
import { DescribeClusterCommand, type EKSClient } from '@aws-sdk/client-eks';
import { KubeConfig, type User } from '@kubernetes/client-node';
import { TransientError } from '../errors.js';
import { EksTokenSource } from './eks-token.js';

type Authenticator = Parameters<KubeConfig['addAuthenticator']>[0];

const eksUserName = 'eks-lifecycle-drainer';

export interface EksConnectionOptions {
  readonly clusterName: string;
  readonly region: string;
  readonly eks: EKSClient;
}

/** Endpoint and CA come from eks:DescribeCluster; the token is minted and refreshed per request. */
export async function connectToEks(options: EksConnectionOptions): Promise<KubeConfig> {
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
  const tokens = new EksTokenSource({
    clusterName: options.clusterName,
    region: options.region,
    credentials: options.eks.config.credentials,
  });
  // Runs on every request, so a container that lives for hours never sends an expired token.
  const authenticator: Authenticator = {
    isAuthProvider: (user: User) => user.name === eksUserName,
    applyAuthentication: async (_user, opts) => {
      opts.headers = { ...opts.headers, Authorization: `Bearer ${await tokens.token()}` };
    },
  };
  const kc = new KubeConfig();
  kc.addAuthenticator(authenticator);
  kc.loadFromOptions({
    clusters: [{ name: options.clusterName, server: endpoint, caData, skipTLSVerify: false }],
    users: [{ name: eksUserName }],
    contexts: [{ name: options.clusterName, cluster: options.clusterName, user: eksUserName }],
    currentContext: options.clusterName,
  });
  return kc;
}

export function loadKubeconfig(path: string, context: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  if (context !== undefined) {
    if (!kc.getContextObject(context)) throw new Error(`KUBECONFIG_CONTEXT ${context} is not in ${path}`);
    kc.setCurrentContext(context);
  }
  return kc;
}
