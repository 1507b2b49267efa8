// Surge before evict's decision, each refusal by name, and the pieces it is made of.
import { describe, expect, it } from 'vitest';
import type { ReplicaPod } from '../../../lambda/cluster/ports/surge-gateway.js';
import {
  antiAffinityRoom,
  participation,
  readyElsewhere,
  refusalOf,
  resolvedMaxSurge,
  restartStillToWrite,
  restartValue,
  writtenBy,
} from '../../../lambda/eviction/surge-rules.js';
import { parseSelector, surgeSettings, type SurgeSettings } from '../../../lambda/shared/surge-variables.js';
import { pod } from '../../fakes/fake-world.js';
import { deployment } from '../../fixtures/surge.js';

const settings: SurgeSettings = surgeSettings({
  surgeBeforeEvict: true,
  surgeNamespaces: ['shop'],
  surgePodSelector: parseSelector('tier=front,!legacy'),
  surgeTimeoutSeconds: 300,
  surgeUntouchableManagers: ['argocd-controller', 'kube-controller-manager/scale'],
})!;

const replica = (o: Partial<ReplicaPod> & { name: string }): ReplicaPod => ({
  uid: `u-${o.name}`,
  nodeName: 'node-b',
  ready: true,
  terminating: false,
  unschedulable: false,
  ...o,
});

describe('surge before evict: who takes part', () => {
  it('is off unless SURGE_BEFORE_EVICT is true', () => {
    expect(
      surgeSettings({
        surgeBeforeEvict: false,
        surgeNamespaces: ['shop'],
        surgePodSelector: undefined,
        surgeTimeoutSeconds: 300,
        surgeUntouchableManagers: undefined,
      }),
    ).toBeUndefined();
  });

  it('takes the annotation on the pod or the Deployment; "false" opts out and wins', () => {
    const plain = deployment({ annotations: {} });
    expect(
      participation(
        pod({ name: 'p', annotations: { 'graceful-node-termination/surge-before-evict': 'true' } }),
        plain,
        settings,
      ),
    ).toBe('opted-in');
    expect(participation(pod({ name: 'p' }), deployment(), settings)).toBe('opted-in');
    expect(
      participation(
        pod({ name: 'p', namespace: 'shop' }),
        deployment({ annotations: { 'graceful-node-termination/surge-before-evict': 'false' } }),
        settings,
      ),
    ).toBe('opted-out');
    expect(participation(pod({ name: 'p' }), plain, settings)).toBe('not-asked');
  });

  it('takes every Deployment of the named namespaces, and those whose template the selector matches', () => {
    expect(participation(pod({ name: 'p', namespace: 'shop' }), deployment({ annotations: {} }), settings)).toBe(
      'opted-in',
    );
    expect(
      participation(
        pod({ name: 'p' }),
        deployment({ annotations: {}, templateLabels: { app: 'web', tier: 'front' } }),
        settings,
      ),
    ).toBe('opted-in');
    expect(
      participation(
        pod({ name: 'p' }),
        deployment({ annotations: {}, templateLabels: { tier: 'front', legacy: 'yes' } }),
        settings,
      ),
    ).toBe('not-asked');
  });

  it('parses selectors as kubectl -l takes equality-based ones, and refuses the rest', () => {
    expect(parseSelector('app=web, tier!=batch,canary,!legacy')).toEqual([
      { key: 'app', op: '=', value: 'web' },
      { key: 'tier', op: '!=', value: 'batch' },
      { key: 'canary', op: 'exists' },
      { key: 'legacy', op: '!exists' },
    ]);
    expect(parseSelector('app in (a,b)')).toBeUndefined();
    expect(parseSelector('!app=web')).toBeUndefined();
    expect(parseSelector('')).toBeUndefined();
  });
});

describe('surge before evict: refusals, each by name', () => {
  it('accepts a settled Deployment that can surge, with a readiness probe', () => {
    expect(refusalOf(deployment(), settings, undefined)).toBeUndefined();
  });

  it.each([
    ['untouchable-owner', deployment({ managers: [{ manager: 'argocd-controller', subresource: '' }] })],
    ['untouchable-owner', deployment({ managers: [{ manager: 'kube-controller-manager', subresource: 'scale' }] })],
    ['paused', deployment({ paused: true })],
    ['not-settled', deployment({ observedGeneration: 1 })],
    ['recreate-strategy', deployment({ strategy: 'Recreate' })],
    ['max-surge-zero', deployment({ maxSurge: 0 })],
    ['max-surge-zero', deployment({ maxSurge: '0%', replicas: 10 })],
    ['no-readiness-probe', deployment({ readinessProbe: false })],
  ] as const)('refuses %s', (reason, d) => {
    expect(refusalOf(d, settings, undefined)).toBe(reason);
  });

  it('refuses required hostname anti-affinity only when no node is left for one more pod', () => {
    const d = deployment({ selfAntiAffinityOnHostname: true });
    expect(refusalOf(d, settings, 0)).toBe('anti-affinity');
    expect(refusalOf(d, settings, 1)).toBeUndefined();
    const pods = [replica({ name: 'a', nodeName: 'node-b' }), replica({ name: 'old', nodeName: 'node-a' })];
    expect(antiAffinityRoom(['node-a', 'node-b', 'node-c'], new Set(['node-a']), pods)).toBe(1);
    expect(antiAffinityRoom(['node-a', 'node-b'], new Set(['node-a']), pods)).toBe(0);
  });

  it('counts the kube-controller-manager as untouchable only for the subresource named', () => {
    expect(
      writtenBy(deployment({ managers: [{ manager: 'kube-controller-manager', subresource: 'status' }] }), [
        'kube-controller-manager/scale',
      ]),
    ).toBe(false);
  });
});

describe('surge before evict: the pieces', () => {
  it('resolves maxSurge as the Deployment controller does: percentages of replicas rounded up', () => {
    expect(resolvedMaxSurge({ maxSurge: '25%', replicas: 1 })).toBe(1);
    expect(resolvedMaxSurge({ maxSurge: '25%', replicas: 0 })).toBe(0);
    expect(resolvedMaxSurge({ maxSurge: '10%', replicas: 11 })).toBe(2);
    expect(resolvedMaxSurge({ maxSurge: 3, replicas: 1 })).toBe(3);
    expect(resolvedMaxSurge({ maxSurge: 'lots', replicas: 1 })).toBe(0);
  });

  it('needs a surge only when no other Ready pod is on a node that stays', () => {
    const leaving = new Set(['node-a', 'node-s']);
    expect(readyElsewhere([replica({ name: 'me', uid: 'me', nodeName: 'node-a' })], 'me', leaving)).toBeUndefined();
    expect(readyElsewhere([replica({ name: 'sib', nodeName: 'node-s' })], 'me', leaving)).toBeUndefined();
    expect(readyElsewhere([replica({ name: 'new', ready: false })], 'me', leaving)).toBeUndefined();
    expect(readyElsewhere([replica({ name: 'going', terminating: true })], 'me', leaving)).toBeUndefined();
    expect(readyElsewhere([replica({ name: 'new' })], 'me', leaving)?.name).toBe('new');
  });

  it('writes the restart as kubectl does (RFC 3339 to the second), and on resume only when the template lacks it', () => {
    expect(restartValue(Date.parse('2026-11-22T10:00:00.750Z'))).toBe('2026-11-22T10:00:00Z');
    expect(restartStillToWrite(undefined, '2026-11-22T10:00:00Z')).toBe(true);
    expect(restartStillToWrite('2026-11-01T00:00:00Z', '2026-11-22T10:00:00Z')).toBe(true);
    expect(restartStillToWrite('2026-11-22T10:00:00Z', '2026-11-22T10:00:00Z')).toBe(false);
    // Someone's later restart, in kubectl's local-time form: never restarted again.
    expect(restartStillToWrite('2026-11-22T11:30:00+01:00', '2026-11-22T10:00:00Z')).toBe(false);
    expect(restartStillToWrite('garbage', '2026-11-22T10:00:00Z')).toBe(false);
  });
});
