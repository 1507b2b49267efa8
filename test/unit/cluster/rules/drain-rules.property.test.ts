// Properties of the drain rules (lambda/cluster/rules/drain-rules.ts) over generated pods and DRAIN_RULES: a pod's
// own mark wins over every rule, the built-in rules win over everything, a do-not-disrupt wait only ends, and a
// pod's rule depends on that pod alone.
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import type { PodInfo } from '../../../../lambda/cluster/model.js';
import {
  capiDrainLabel,
  defaultOrders,
  drainBehaviorKey,
  drainOrderKey,
  podRule,
  type DrainRuleSettings,
} from '../../../../lambda/cluster/rules/drain-rules.js';
import { isFinished, isMirrorPod } from '../../../../lambda/cluster/rules/pods.js';
import { doNotDisruptAnnotation } from '../../../../lambda/cluster/rules/do-not-disrupt.js';
import { waitForCompletionAnnotation } from '../../../../lambda/cluster/rules/drain-rules.js';
import { aroundT0, drainRuleSettingsArb, drainRulesArb, podArb, podsArb, t0 } from '../../../fakes/arbitraries.js';

/** A built-in rule decides the pod before anything of its own or any rule is read. */
const builtIn = (pod: PodInfo, s: DrainRuleSettings) =>
  isMirrorPod(pod) || isFinished(pod) || (pod.controllerKind === 'DaemonSet' && !s.evictDaemonSetPods);

const own = (pod: PodInfo, key: string): string | undefined =>
  pod.labels !== undefined && Object.hasOwn(pod.labels, key) ? pod.labels[key] : undefined;

/** The behaviour the pod's own label or mark names, spelled any way the rules accept (undefined: none). */
function ownBehavior(pod: PodInfo): 'Drain' | 'Skip' | 'WaitCompleted' | undefined {
  const norm = (v: string) => v.toLowerCase().replace('-', '');
  const capi = own(pod, capiDrainLabel);
  if (capi !== undefined && norm(capi) === 'skip') return 'Skip';
  if (capi !== undefined && norm(capi) === 'waitcompleted') return 'WaitCompleted';
  const ours = own(pod, drainBehaviorKey) ?? pod.annotations[drainBehaviorKey];
  const named = { drain: 'Drain', skip: 'Skip', waitcompleted: 'WaitCompleted' } as const;
  if (ours !== undefined && Object.hasOwn(named, norm(ours))) return named[norm(ours) as keyof typeof named];
  return undefined;
}

const pending: PodInfo = {
  namespace: 'default',
  name: 'etl',
  uid: 'uid-etl',
  phase: 'Pending',
  controllerKind: 'ReplicaSet',
  annotations: {},
  priorityClassName: undefined,
  deletionTimestamp: undefined,
  tolerations: [],
};

describe('drain rules (properties)', () => {
  test.prop([podArb(0), drainRuleSettingsArb, drainRulesArb])(
    "a pod's own label or mark wins over every DRAIN_RULES rule",
    (pod, settings, otherRules) => {
      fc.pre(!builtIn(pod, settings) && ownBehavior(pod) !== undefined);
      const rule = podRule(pod, settings, t0);
      expect(rule.behavior).toBe(ownBehavior(pod));
      expect(podRule(pod, { ...settings, drainRules: otherRules }, t0)).toEqual(rule);
      expect(rule.builtIn).toBeUndefined();
    },
  );

  test.prop([podArb(0), drainRuleSettingsArb, drainRulesArb])(
    'the built-in rules (static, finished, DaemonSet pods not evicted) win over everything, and are never told',
    (pod, settings, otherRules) => {
      fc.pre(builtIn(pod, settings));
      for (const s of [settings, { ...settings, drainRules: otherRules }])
        expect(podRule(pod, s, t0)).toMatchObject({ behavior: 'Skip', builtIn: true });
    },
  );

  test.prop([podArb(0), drainRuleSettingsArb])(
    "Cluster API's label wins over our mark, whichever it names",
    (pod, settings) => {
      const capi = own(pod, capiDrainLabel)?.toLowerCase().replace('-', '');
      fc.pre(!builtIn(pod, settings) && (capi === 'skip' || capi === 'waitcompleted'));
      expect(podRule(pod, settings, t0).behavior).toBe(capi === 'skip' ? 'Skip' : 'WaitCompleted');
    },
  );

  test.prop([podArb(0), drainRuleSettingsArb, fc.integer({ min: 0, max: 8 * 3600_000 })])(
    'a wait only ends: a pod waited for later was waited for earlier (do-not-disrupt durations elapse)',
    (pod, settings, laterMs) => {
      const now = podRule(pod, settings, t0);
      const later = podRule(pod, settings, t0 + laterMs);
      if (later.behavior === 'WaitCompleted') expect(now.behavior).toBe('WaitCompleted');
      if (now.behavior === 'WaitCompleted' && now.untilMs !== undefined) {
        expect(now.untilMs).toBeGreaterThan(t0);
        if (t0 + laterMs >= now.untilMs) expect(later).not.toMatchObject({ untilMs: now.untilMs });
      }
    },
  );

  test.prop([podArb(0), drainRuleSettingsArb])(
    'a Drain order is an int32, and a pod with no order of its own or of a rule gets a default order',
    (pod, settings) => {
      const rule = podRule(pod, settings, t0);
      fc.pre(rule.behavior === 'Drain');
      expect(Number.isInteger(rule.order)).toBe(true);
      expect(Math.abs(rule.order)).toBeLessThanOrEqual(2_147_483_648);
      const ownOrder = own(pod, drainOrderKey) ?? pod.annotations[drainOrderKey];
      if (settings.drainRules.length === 0 && ownOrder === undefined && ownBehavior(pod) === undefined)
        expect(Object.values(defaultOrders)).toContain(rule.order);
    },
  );

  test.prop([podArb(0), fc.boolean()])(
    'with no rules and nothing of its own, a critical pod leaves after every other kind of its node',
    (pod, evictDaemonSetPods) => {
      const plain = {
        ...pod,
        labels: {},
        annotations: Object.fromEntries(
          Object.entries(pod.annotations).filter(
            ([k]) => k !== drainBehaviorKey && k !== drainOrderKey && k !== doNotDisruptAnnotation,
          ),
        ),
      };
      delete plain.annotations[waitForCompletionAnnotation];
      const settings = { drainRules: [], evictDaemonSetPods };
      const critical = podRule({ ...plain, priorityClassName: 'system-node-critical' }, settings, t0);
      const ordinary = podRule({ ...plain, priorityClassName: undefined }, settings, t0);
      if (critical.behavior === 'Drain' && ordinary.behavior === 'Drain')
        expect(critical.order).toBeGreaterThan(ordinary.order);
    },
  );

  test.prop([podsArb(), drainRuleSettingsArb, aroundT0])(
    'a rule is a function of the pod, the settings and the moment asked about, never of the machine clock',
    async (pods, settings, nowMs) => {
      const first = pods.map((pod) => podRule(pod, settings, nowMs));
      await new Promise((resolve) => setTimeout(resolve, 2));
      expect(pods.map((pod) => podRule(pod, settings, nowMs))).toEqual(first);
    },
  );

  it('a pod not yet bound is protected by a do-not-disrupt duration from the moment asked about (found by the plan property, seed -259252691)', () => {
    const unbound = { ...pending, annotations: { [doNotDisruptAnnotation]: '90m' } };
    // The fake world's clock is days away from the machine's: the wait is measured on the drain's own clock.
    const nowMs = Date.now() - 5 * 86_400_000;
    expect(podRule(unbound, { drainRules: [], evictDaemonSetPods: false }, nowMs)).toMatchObject({
      behavior: 'WaitCompleted',
      untilMs: nowMs + 90 * 60_000,
    });
  });
});
