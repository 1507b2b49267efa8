// The Kubernetes versions the installer applies to. The FlowSchema and PriorityLevelConfiguration
// it installs are flowcontrol.apiserver.k8s.io/v1, served from Kubernetes 1.29: an older API
// server would refuse them halfway through the install, so it is refused first, by its version.
// https://kubernetes.io/docs/reference/using-api/deprecation-guide/#flowcontrol-resources-v129
import type { KubeHttp } from '../adapters/kubernetes/kube-http.js';
import { ConfigError } from '../shared/errors.js';

/** The oldest Kubernetes minor version the installed objects exist in. */
export const minimumKubernetesVersion = { major: 1, minor: 29 } as const;

export interface ServerVersion {
  readonly major: number;
  readonly minor: number;
  /** As the server names itself, e.g. `v1.34.1-eks-ab12cd3`. */
  readonly gitVersion: string;
}

interface VersionInfo {
  readonly major?: unknown;
  readonly minor?: unknown;
  readonly gitVersion?: unknown;
}

/** GET /version (public to every authenticated user): the server's major and minor version. */
export async function readServerVersion(kube: KubeHttp): Promise<ServerVersion> {
  const info = await kube.request<VersionInfo>('GET', '/version');
  const gitVersion = typeof info?.gitVersion === 'string' ? info.gitVersion : '';
  // gitVersion first: EKS answers a minor such as "29+".
  const semver = /^v?(\d+)\.(\d+)/.exec(gitVersion);
  const major = semver ? Number(semver[1]) : Number.parseInt(String(info?.major), 10);
  const minor = semver ? Number(semver[2]) : Number.parseInt(String(info?.minor), 10);
  if (!Number.isInteger(major) || !Number.isInteger(minor)) {
    throw new Error(`GET /version named no Kubernetes version: ${JSON.stringify(info).slice(0, 200)}`);
  }
  return { major, minor, gitVersion: gitVersion || `${major}.${minor}` };
}

/**
 * Surge before evict's fence is an admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy,
 * served from Kubernetes 1.30: without it the drainer's patch on Deployments would be unfenced.
 * https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/
 */
export const minimumSurgeKubernetesVersion = { major: 1, minor: 30 } as const;

/** A ConfigError when surge before evict is asked of a server older than its policy. */
export function requireSurgeServer(version: ServerVersion): void {
  const { major, minor } = minimumSurgeKubernetesVersion;
  if (version.major < major || (version.major === major && version.minor < minor)) {
    throw new ConfigError([
      `the cluster runs Kubernetes ${version.gitVersion}; surge before evict needs ${major}.${minor} or later ` +
        `(its ValidatingAdmissionPolicy is admissionregistration.k8s.io/v1): turn surgeBeforeEvict off or upgrade ` +
        `the cluster`,
    ]);
  }
}

/** The server's version, or a ConfigError naming it and the minimum when it is older. */
export async function requireSupportedServer(kube: KubeHttp): Promise<ServerVersion> {
  const version = await readServerVersion(kube);
  const { major, minor } = minimumKubernetesVersion;
  if (version.major < major || (version.major === major && version.minor < minor)) {
    throw new ConfigError([
      `the cluster runs Kubernetes ${version.gitVersion} (${version.major}.${version.minor}); ` +
        `graceful-node-termination needs ${major}.${minor} or later ` +
        `(its FlowSchema and PriorityLevelConfiguration are flowcontrol.apiserver.k8s.io/v1): upgrade the ` +
        `cluster, then deploy again`,
    ]);
  }
  return version;
}
