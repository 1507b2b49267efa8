// Observe mode's surge look (termination/observe-surges.ts): the drain's own first look, told and
// never acted on. Two pods of one Deployment are one restart; a read that fails loses that pod's
// line, never the others'; with the surge off, or a cluster that serves no Deployments, nothing.
import { describe, expect, it } from 'vitest';
import type { ClusterGateway } from '../../../lambda/cluster/ports/cluster-gateway.js';
import {
  describeSurges,
  leavingWith,
  observeSurges,
  surgeLookBudgetMs,
} from '../../../lambda/termination/observe-surges.js';
import { FakeClock, MemoryLog, pod } from '../../fakes/fake-world.js';
import { deployment, FakeSurgeApi, surgeOn } from '../../fixtures/surge.js';

const settings = surgeOn;
const asCluster = (api: FakeSurgeApi) => api as unknown as ClusterGateway & FakeSurgeApi;
const leaving = async () => new Set(['node-a']);

describe('observe mode: surge before evict', () => {
  it('names one restart for two pods of one Deployment, and restarts nothing', async () => {
    const api = new FakeSurgeApi();
    const pods = [
      pod({ name: 'web-1', controllerKind: 'ReplicaSet' }),
      pod({ name: 'web-2', controllerKind: 'ReplicaSet' }),
    ];
    api.pods = pods.map((p) => ({
      name: p.name,
      uid: p.uid,
      nodeName: 'node-a',
      ready: true,
      terminating: false,
      unschedulable: false,
    }));
    const told = await observeSurges(asCluster(api), pods, {
      settings,
      leaving,
      clock: new FakeClock(),
      log: new MemoryLog(),
    });
    expect(told.map((s) => [s.pod, s.verdict])).toEqual([
      ['default/web-1', 'surge'],
      ['default/web-2', 'surge'],
    ]);
    expect(api.restarts).toEqual([]);
    expect(api.records).toEqual([]);
    expect(describeSurges(told)).toBe(
      'surge before evict: restart Deployment default/web and hold default/web-1, default/web-2 until a replacement is Ready elsewhere',
    );
  });

  it('tells a refusal by name, and a failed read loses only its own pod', async () => {
    const api = new FakeSurgeApi(deployment({ maxSurge: 0 }));
    const bad = pod({ name: 'bad-1', controllerKind: 'ReplicaSet' });
    const good = pod({ name: 'web-1', controllerKind: 'ReplicaSet' });
    api.pods = [
      { name: good.name, uid: good.uid, nodeName: 'node-a', ready: true, terminating: false, unschedulable: false },
    ];
    const lookup = api.deploymentOfPod.bind(api);
    api.deploymentOfPod = async (...args: unknown[]) => {
      if ((args[0] as { name: string }).name === 'bad-1') throw new Error('connection reset');
      return lookup();
    };
    const log = new MemoryLog();
    const told = await observeSurges(asCluster(api), [bad, good], { settings, leaving, clock: new FakeClock(), log });
    expect(told).toEqual([
      { pod: 'default/bad-1', deployment: undefined, verdict: 'could-not-tell' },
      { pod: 'default/web-1', deployment: 'default/web', verdict: 'max-surge-zero' },
    ]);
    expect(describeSurges(told)).toBe(
      'surge before evict: could not tell for default/bad-1, not surge default/web-1 (max-surge-zero)',
    );
    expect(log.lines.some((e) => e.message === 'observe mode: could not work out whether a pod would be surged')).toBe(
      true,
    );
  });

  it('looks at nothing with the surge off', async () => {
    const api = new FakeSurgeApi();
    expect(
      await observeSurges(asCluster(api), [pod({ name: 'web-1', controllerKind: 'ReplicaSet' })], {
        settings: undefined,
        leaving,
        clock: new FakeClock(),
        log: new MemoryLog(),
      }),
    ).toEqual([]);
    expect(api.lookups).toBe(0);
    expect(describeSurges([])).toBeUndefined();
  });

  it('looks only at the pods a Deployment can own, as the drain does', async () => {
    const api = new FakeSurgeApi();
    const pods = [
      pod({ name: 'bare', controllerKind: undefined }),
      pod({ name: 'agent', controllerKind: 'DaemonSet' }),
    ];
    expect(
      await observeSurges(asCluster(api), pods, { settings, leaving, clock: new FakeClock(), log: new MemoryLog() }),
    ).toEqual([]);
    expect(api.lookups).toBe(0);
  });

  it('stops looking at its budget and says so for the pods left, so the action completes in time', async () => {
    const api = new FakeSurgeApi();
    const clock = new FakeClock();
    const slow = api.deploymentOfPod.bind(api);
    api.deploymentOfPod = async () => {
      clock.advanceTo(clock.now() + surgeLookBudgetMs + 1);
      return slow();
    };
    const pods = [
      pod({ name: 'web-1', controllerKind: 'ReplicaSet', controllerUid: 'a' }),
      pod({ name: 'api-1', controllerKind: 'ReplicaSet', controllerUid: 'b' }),
    ];
    api.pods = [
      { name: 'web-1', uid: pods[0]!.uid, nodeName: 'node-a', ready: true, terminating: false, unschedulable: false },
    ];
    const told = await observeSurges(asCluster(api), pods, { settings, leaving, clock, log: new MemoryLog() });
    expect(told.map((s) => s.verdict)).toEqual(['surge', 'could-not-tell']);
  });

  it('counts what it can read as leaving when a read fails, and logs it', async () => {
    const log = new MemoryLog();
    const cluster = {
      drainMarkedNames: async () => {
        throw new Error('throttled');
      },
      findNodeByInstanceId: async (id: string) => (id === 'i-2' ? { name: 'node-2' } : undefined),
    } as unknown as ClusterGateway;
    expect(await leavingWith(cluster, 'node-1', ['i-2', 'i-3'], 'gnt', log)).toEqual(new Set(['node-1', 'node-2']));
    expect(log.lines.filter((l) => l.level === 'warn').map((l) => l.message)).toEqual([
      'observe mode: could not read the nodes our drains marked; the surge look counts fewer nodes as leaving',
    ]);
  });
});
