// The EC2 private DNS names of instances, which name their nodes on EKS: asked once per instance and
// kept for the container's life (a name never changes while the instance lives).
import { type InstanceDirectory } from '../../shared/aws-ports.js';
import { ServiceBusyError } from '../../shared/errors.js';
import { asError, type Log } from '../../shared/log.js';

export type AskNames = (ids: readonly string[]) => ReturnType<typeof askNames>;

/** EC2's names, each asked once per container: an instance's private DNS name never changes. */
export function cachedNames(directory: Pick<InstanceDirectory, 'privateDnsNames'> | undefined, log: Log): AskNames {
  const known = new Map<string, string>();
  return async (instanceIds) => {
    const asked = await askNames(
      directory,
      instanceIds.filter((id) => !known.has(id)),
      log,
    );
    if (known.size > 10_000) known.clear();
    for (const [id, name] of asked.names) known.set(id, name);
    const names = new Map(instanceIds.flatMap((id) => (known.has(id) ? [[id, known.get(id)!] as const] : [])));
    return { ...asked, names };
  };
}

/**
 * EC2's names. Throttled or busy (the runtime has already asked again for a while,
 * aws-patience.ts), the caller is told so: a launch asks again later and a sibling lookup
 * gives up, rather than scanning the node list, which in a wave would be one list per drain.
 * Any other failure (no permission, unreachable) is logged and costs only the fast path.
 */
export async function askNames(
  directory: Pick<InstanceDirectory, 'privateDnsNames'> | undefined,
  instanceIds: readonly string[],
  log: Log,
): Promise<{
  readonly names: ReadonlyMap<string, string>;
  readonly failure: Error | undefined;
  readonly busy: boolean;
}> {
  if (directory === undefined || instanceIds.length === 0) return { names: new Map(), failure: undefined, busy: false };
  try {
    return { names: await directory.privateDnsNames(instanceIds), failure: undefined, busy: false };
  } catch (error) {
    log.warn(
      "could not ask EC2 for the instances' private DNS names; looking the nodes up without them",
      asError(error),
    );
    return { names: new Map(), failure: asError(error), busy: error instanceof ServiceBusyError };
  }
}
