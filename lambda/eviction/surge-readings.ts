// What the surge gate reads more than once in an invocation, read once: each surge's Deployment (a
// resumed surge writes the restart its record names but the template lacks) and which nodes are
// leaving (this node and every node a drain of ours marked), for a few seconds.
import type { DeploymentInfo, SurgeGateway } from '../cluster/ports/surge-gateway.js';
import type { NodeGateway } from '../cluster/ports/node-gateway.js';
import type { SurgeMark } from '../cluster/model.js';
import type { Clock } from '../shared/clock.js';
import type { Log } from '../shared/log.js';
import { restartStillToWrite } from './surge-decide.js';

const leavingTtlMs = 10_000;

export class SurgeReadings {
  private readonly deployments = new Map<string, DeploymentInfo>();
  private leavingCache: { readonly atMs: number; readonly names: ReadonlySet<string> } | undefined;

  constructor(
    private readonly deps: {
      readonly api: SurgeGateway;
      readonly nodes: Pick<NodeGateway, 'drainMarkedNames'>;
      readonly clock: Clock;
      readonly log: Log;
    },
    private readonly o: { readonly node: string; readonly owner: string },
  ) {}

  /** A Deployment this invocation restarted itself: already as it should be. */
  remember(d: DeploymentInfo): void {
    this.deployments.set(`${d.namespace}/${d.name}`, d);
  }

  /**
   * The Deployment of a surge, read once per invocation; a resumed surge writes a restart the record names but the
   * template lacks.
   */
  async deployment(mark: SurgeMark): Promise<DeploymentInfo | undefined> {
    const known = this.deployments.get(mark.deployment);
    if (known !== undefined) return known;
    const [namespace = '', name = ''] = mark.deployment.split('/');
    const found = await this.deps.api.readDeployment(namespace, name);
    if (found === undefined) return undefined;
    if (mark.restartedAt !== undefined && restartStillToWrite(found.restartedAt, mark.restartedAt)) {
      this.deps.log.info(
        'surge before evict: writing the restart the record names (the previous invocation stopped before it)',
        { deployment: mark.deployment },
      );
      await this.deps.api.restartDeployment(found, mark.restartedAt);
    } else {
      this.deps.log.info('surge before evict resumed: the Deployment already carries the restart', {
        deployment: mark.deployment,
        restartedAt: mark.restartedAt,
      });
    }
    this.deployments.set(mark.deployment, found);
    return found;
  }

  /**
   * This node and every node a drain of ours marked (siblings cordoned ahead): a replacement there would leave again.
   */
  async leaving(): Promise<ReadonlySet<string>> {
    const now = this.deps.clock.now();
    if (this.leavingCache === undefined || now - this.leavingCache.atMs > leavingTtlMs) {
      const names = new Set(await this.deps.nodes.drainMarkedNames(this.o.owner));
      names.add(this.o.node);
      this.leavingCache = { atMs: now, names };
    }
    return this.leavingCache.names;
  }
}
