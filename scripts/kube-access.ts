// The Kubernetes side of the operator commands: the kubeconfig as kubectl finds it
// (--kubeconfig, then KUBECONFIG, then ~/.kube/config; --context, then its current context),
// loaded by client-node (exec plugins such as `aws eks get-token` included). A missing file or
// an unknown context is said plainly, with the contexts there are.
import { KubeConfig } from '@kubernetes/client-node';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { UsageError } from './command-options.js';

export interface KubeAccess {
  readonly kc: KubeConfig;
  readonly context: string;
  /** The API server's URL, for messages. */
  readonly server: string;
}

const nextStep =
  'pass --kubeconfig, set KUBECONFIG, or run: aws eks update-kubeconfig --name <cluster> --region <region>';

/** The kubeconfig files kubectl would read, in order. */
export function kubeconfigFiles(
  o: { kubeconfig?: string | undefined },
  env: NodeJS.ProcessEnv = process.env,
): string[] {
  if (o.kubeconfig) return [o.kubeconfig];
  const fromEnv = (env['KUBECONFIG'] ?? '').split(delimiter).filter(Boolean);
  return fromEnv.length > 0 ? fromEnv : [join(env['HOME'] ?? homedir(), '.kube', 'config')];
}

export function loadKubeAccess(
  o: { kubeconfig?: string | undefined; context?: string | undefined },
  env: NodeJS.ProcessEnv = process.env,
): KubeAccess {
  const files = kubeconfigFiles(o, env);
  const present = files.filter((f) => existsSync(f));
  if (present.length === 0) throw new UsageError(`no kubeconfig at ${files.join(', ')}: ${nextStep}`);
  const kc = new KubeConfig();
  try {
    // As kubectl merges KUBECONFIG's files: the first file that names a cluster, user or
    // context wins, and the first current-context set (client-node's mergeConfig throws on a
    // name two files share, which kubectl allows).
    const loaded = present.map((file) => {
      const one = new KubeConfig();
      one.loadFromFile(file);
      return one;
    });
    const firstByName = <T extends { name: string }>(lists: T[][]) =>
      [
        ...new Map(
          lists
            .flat()
            .reverse()
            .map((x) => [x.name, x] as const),
        ).values(),
      ].reverse();
    kc.loadFromOptions({
      clusters: firstByName(loaded.map((k) => k.getClusters())),
      users: firstByName(loaded.map((k) => k.getUsers())),
      contexts: firstByName(loaded.map((k) => k.getContexts())),
      currentContext: loaded.map((k) => k.getCurrentContext()).find(Boolean),
    });
  } catch (error) {
    throw new UsageError(`cannot read the kubeconfig ${present.join(', ')}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const contexts = kc.getContexts().map((c) => c.name);
  const context = o.context ?? kc.getCurrentContext();
  if (!context || !contexts.includes(context)) {
    const what = o.context ? `no context ${JSON.stringify(o.context)}` : 'no current context';
    throw new UsageError(
      `${what} in the kubeconfig ${present.join(', ')}; contexts there: ${contexts.join(', ') || 'none'} (pass --context)`,
    );
  }
  kc.setCurrentContext(context);
  const server = kc.getCurrentCluster()?.server;
  if (!server)
    throw new UsageError(`the context ${context} of ${present.join(', ')} names no cluster with a server: ${nextStep}`);
  return { kc, context, server };
}
