// What the surge gate reads more than once in an invocation, read once: each surge's Deployment (a
// resumed surge writes the restart its record names but the template lacks) and which nodes are
// leaving (this node and every node a drain of ours marked), for a few seconds.
import type { DeploymentInfo, SurgeGateway } from '../cluster/ports/surge-gateway.js';
import type { NodeGateway } from '../cluster/ports/node-gateway.js';
import type { SurgeMark } from '../cluster/model.js';
import { deploymentKey } from '../cluster/marks/surge-marks.js';
import type { Clock } from '../shared/clock.js';
import type { Log } from '../shared/log.js';
import { restartStillToWrite } from './surge-rules.js';
import { restartedSince, restartOnce } from './surge-restart.js';

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
    private readonly o: { readonly node: string; readonly owner: string; readonly drainStartedAtMs: number },
  ) {}

  /** A Deployment this invocation restarted itself: already as it should be. */
  remember(d: DeploymentInfo): void {
    this.deployments.set(deploymentKey(d), d);
  }

  /** A restart that got no answer: read again, so the restart the record names is written if it is missing. */
  forget(d: Pick<DeploymentInfo, 'namespace' | 'name'>): void {
    this.deployments.delete(deploymentKey(d));
  }

  /**
   * The Deployment of a surge, read once per invocation; a resumed surge writes a restart the record names but the
   * template lacks.
   */
  async deployment(mark: SurgeMark): Promise<DeploymentInfo | undefined> {
    if (mark.deployment === undefined) return undefined;
    const key = deploymentKey(mark.deployment);
    const known = this.deployments.get(key);
    if (known !== undefined) return known;
    const found = await this.deps.api.readDeployment(mark.deployment.namespace, mark.deployment.name);
    if (found === undefined) return undefined;
    // A restart made since the drain began (a twin invocation's, whose write came first) serves this drain too.
    const fresh = restartedSince(found, this.o.drainStartedAtMs) !== undefined;
    if (mark.restartedAt !== undefined && !fresh && restartStillToWrite(found.restartedAt, mark.restartedAt)) {
      this.deps.log.info(
        'surge before evict: writing the restart the record names (the previous invocation stopped before it)',
        { deployment: key },
      );
      const outcome = await restartOnce(this.deps.api, found, mark.restartedAt);
      if (outcome.kind === 'gone') return undefined;
      this.deployments.set(key, outcome.d);
      return outcome.d;
    } else {
      this.deps.log.info('surge before evict resumed: the Deployment already carries the restart', {
        deployment: key,
        restartedAt: mark.restartedAt,
      });
    }
    this.deployments.set(key, found);
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
