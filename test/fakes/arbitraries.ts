// fast-check arbitraries of the model's data for the property tests (test/unit/**/*.property.test.ts): pods
// as the drain rules read them, drain rule settings, drain records, and the untrusted text our parsers see.
// Keys and values are drawn from small pools that include every spelling the rules know, values they must
// ignore, and the names every plain object already has ("constructor", "__proto__"): a lookup in a plain
// object by an untrusted key finds those.
import { fc } from '@fast-check/vitest';
import type {
  DrainMark,
  DrainRecord,
  DrainSource,
  PodInfo,
  StoredHold,
  SurgeMark,
  Toleration,
} from '../../lambda/cluster/model.js';
import { capiDrainLabel, drainBehaviorKey, drainOrderKey } from '../../lambda/cluster/rules/drain-rules.js';
import { waitForCompletionAnnotation, type DrainRuleSettings } from '../../lambda/cluster/rules/drain-rules.js';
import { doNotDisruptAnnotation } from '../../lambda/cluster/rules/do-not-disrupt.js';
import { mirrorPodAnnotation } from '../../lambda/cluster/rules/pods.js';
import type { DrainRuleSpec } from '../../lambda/shared/drain-rule-variables.js';

// PROPERTY_RUNS=5000 searches deeper than the default 100 runs a property; PROPERTY_SEED replays one run (fast-check
// prints the seed of a failure). The mutation run fixes the seed (vitest.mutation.config.ts), so a mutant is judged
// by the same inputs every time.
const runs = process.env['PROPERTY_RUNS'];
const seed = process.env['PROPERTY_SEED'];
fc.configureGlobal({
  ...(runs !== undefined ? { numRuns: Number(runs) } : {}),
  ...(seed !== undefined ? { seed: Number(seed) } : {}),
});

/** A property's own run count (a slow one runs fewer than 100), unless PROPERTY_RUNS asks for more. */
export const numRuns = (n: number): number => (runs !== undefined ? Number(runs) : n);

/** Names every plain object answers to: an untrusted key must never find one of these. */
export const prototypeNames = ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty'] as const;

/** A fixed time around which the generated clocks and timestamps sit (2026-11-22T10:00:00Z). */
export const t0 = Date.parse('2026-11-22T10:00:00Z');

/** Epoch milliseconds within a few days of t0. */
export const aroundT0 = fc.integer({ min: t0 - 3 * 86_400_000, max: t0 + 3 * 86_400_000 });

const appLabelKeys = ['app', 'tier', 'team', ...prototypeNames] as const;
const appLabelValues = ['web', 'batch', 'db', 'x', ''] as const;

/** The values the drain labels and marks take: every spelling the rules know, and ones they must treat as other. */
const behaviorValues = fc.constantFrom(
  'skip',
  'Skip',
  'SKIP',
  'wait-completed',
  'WaitCompleted',
  'waitcompleted',
  'wait--completed',
  'drain',
  'Drain',
  'nonsense',
  '',
  ...prototypeNames,
);
const orderValues = fc.oneof(
  fc.integer({ min: -3000, max: 3000 }).map(String),
  fc.constantFrom('2147483647', '-2147483648', '2147483648', '1.5', 'ten', ' 7 ', '', '99999999999'),
);
const doNotDisruptValues = fc.constantFrom('true', 'false', '90m', '1h30m', '2h', '0', '-5m', '10s', 'soon', '');

/** A small map whose keys may repeat what other generators set. */
const labelMap = fc.dictionary(fc.constantFrom(...appLabelKeys), fc.constantFrom(...appLabelValues), { maxKeys: 3 });

/** Absent most of the time, else drawn from `arb`. */
const sometimes = <T>(arb: fc.Arbitrary<T>, weight = 1): fc.Arbitrary<T | undefined> =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, { arbitrary: arb, weight });

/** The drain rules' own keys on a pod, as labels or annotations, each maybe absent. */
const drainKeys = fc.record({
  capi: sometimes(behaviorValues),
  ours: sometimes(behaviorValues),
  oursAsAnnotation: fc.boolean(),
  order: sometimes(orderValues),
  orderAsAnnotation: fc.boolean(),
  waitForCompletion: sometimes(fc.constantFrom('true', 'false', 'yes')),
  doNotDisrupt: sometimes(doNotDisruptValues),
  mirror: fc.oneof({ arbitrary: fc.constant(false), weight: 9 }, { arbitrary: fc.constant(true), weight: 1 }),
});

const tolerations: fc.Arbitrary<Toleration[]> = fc.array(
  fc.oneof(
    fc.constant({ operator: 'Exists' }),
    fc.constant({ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }),
    fc.constant({ key: 'other', operator: 'Equal', value: 'x', effect: 'NoSchedule' }),
  ),
  { maxLength: 2 },
);

/** One pod with its drain keys; uid and name unique per index (podsArb makes them so). */
export function podArb(index: number, nowMs = t0): fc.Arbitrary<PodInfo> {
  return fc
    .record({
      namespace: fc.constantFrom('default', 'kube-system', 'batch', 'constructor'),
      phase: fc.constantFrom('Running', 'Running', 'Running', 'Pending', 'Succeeded', 'Failed'),
      controllerKind: fc.constantFrom('ReplicaSet', 'ReplicaSet', 'DaemonSet', 'Job', 'StatefulSet', undefined),
      labels: fc.option(labelMap, { nil: undefined }),
      extraAnnotations: labelMap,
      keys: drainKeys,
      priorityClassName: fc.constantFrom(undefined, 'system-cluster-critical', 'system-node-critical', 'high'),
      terminating: fc.option(fc.integer({ min: -600_000, max: 600_000 }), { nil: undefined }),
      startedAgoMs: fc.option(fc.integer({ min: 0, max: 6 * 3600_000 }), { nil: undefined }),
      terminationGracePeriodSeconds: fc.option(fc.integer({ min: 0, max: 3600 }), { nil: undefined }),
      tolerations,
    })
    .map((g) => {
      const labels: Record<string, string> = { ...g.labels };
      const annotations: Record<string, string> = { ...g.extraAnnotations };
      const k = g.keys;
      if (k.capi !== undefined) labels[capiDrainLabel] = k.capi;
      if (k.ours !== undefined) (k.oursAsAnnotation ? annotations : labels)[drainBehaviorKey] = k.ours;
      if (k.order !== undefined) (k.orderAsAnnotation ? annotations : labels)[drainOrderKey] = k.order;
      if (k.waitForCompletion !== undefined) annotations[waitForCompletionAnnotation] = k.waitForCompletion;
      if (k.doNotDisrupt !== undefined) annotations[doNotDisruptAnnotation] = k.doNotDisrupt;
      if (k.mirror) annotations[mirrorPodAnnotation] = 'mirror';
      const withLabels = g.labels !== undefined || Object.keys(labels).length > 0;
      return {
        namespace: g.namespace,
        name: `pod-${index}`,
        uid: `uid-${index}`,
        phase: g.phase,
        controllerKind: g.controllerKind,
        controllerUid: g.controllerKind === undefined ? undefined : `owner-${g.controllerKind}`,
        annotations,
        ...(withLabels ? { labels } : {}),
        startedAt: g.startedAgoMs === undefined ? undefined : new Date(nowMs - g.startedAgoMs),
        priorityClassName: g.priorityClassName,
        deletionTimestamp: g.terminating === undefined ? undefined : new Date(nowMs + g.terminating),
        tolerations: g.tolerations,
        terminationGracePeriodSeconds: g.terminationGracePeriodSeconds,
      } satisfies PodInfo;
    });
}

/** Up to `max` values, the i-th drawn from `arbOf(i)` (each its own name and uid, say). */
export function indexedArray<T>(max: number, arbOf: (i: number) => fc.Arbitrary<T>): fc.Arbitrary<T[]> {
  return fc
    .integer({ min: 0, max })
    .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => arbOf(i))).map((values): T[] => [...values]));
}

/** Up to `max` pods, each with its own uid and name. */
export function podsArb(max = 12, nowMs = t0): fc.Arbitrary<PodInfo[]> {
  return indexedArray(max, (i) => podArb(i, nowMs));
}

const selectorArb = fc.record(
  {
    matchLabels: fc.dictionary(fc.constantFrom(...appLabelKeys), fc.constantFrom(...appLabelValues), { maxKeys: 2 }),
    matchExpressions: fc.array(
      fc.record({
        key: fc.constantFrom(...appLabelKeys),
        operator: fc.constantFrom('In', 'NotIn', 'Exists', 'DoesNotExist'),
        values: fc.array(fc.constantFrom(...appLabelValues), { minLength: 1, maxLength: 2 }),
      }),
      { maxLength: 2 },
    ),
  },
  { requiredKeys: [] },
);

/** DRAIN_RULES as the configuration accepts them (unique names, order only with Drain). */
export const drainRulesArb: fc.Arbitrary<DrainRuleSpec[]> = fc
  .array(
    fc.record({
      behavior: fc.constantFrom('Drain', 'Skip', 'WaitCompleted') as fc.Arbitrary<DrainRuleSpec['behavior']>,
      order: fc.option(fc.integer({ min: -3000, max: 3000 }), { nil: undefined }),
      pods: fc.option(
        fc.array(
          fc.record(
            {
              selector: selectorArb,
              namespaceSelector: fc.record({
                matchLabels: fc.constantFrom<Record<string, string>>({}, { 'kubernetes.io/metadata.name': 'batch' }),
              }),
            },
            { requiredKeys: [] },
          ),
          { maxLength: 2 },
        ),
        { nil: undefined },
      ),
    }),
    { maxLength: 4 },
  )
  .map((rules) =>
    rules.map((r, i) => ({
      name: `rule-${i}`,
      behavior: r.behavior,
      ...(r.behavior === 'Drain' && r.order !== undefined ? { order: r.order } : {}),
      ...(r.pods !== undefined ? { pods: r.pods } : {}),
    })),
  );

export const drainRuleSettingsArb: fc.Arbitrary<DrainRuleSettings> = fc.record({
  drainRules: drainRulesArb,
  evictDaemonSetPods: fc.boolean(),
});

/** Milliseconds a record keeps exactly: what an ISO 8601 string can say. */
const recordTime = fc.integer({ min: Date.parse('2000-01-01T00:00:00Z'), max: Date.parse('2100-01-01T00:00:00Z') });

const hookArb = fc.option(fc.constantFrom('workers-terminate', 'h', 'a/b'), { nil: undefined });

/** Every source a drain record can name, as the code builds them (marks set ahead have no action). */
export const drainSourceArb: fc.Arbitrary<DrainSource> = fc.oneof(
  fc
    .record({ h: fc.stringMatching(/^[0-9a-f]{32}$/), hook: hookArb })
    .map(({ h, hook }) => ({ kind: 'lifecycle-action' as const, actionId: `sha256:${h}` as const, hook })),
  fc
    .record({ i: fc.stringMatching(/^i-[0-9a-f]{17}$/), hook: hookArb })
    .map(({ i, hook }) => ({ kind: 'resumed' as const, actionId: `instance:${i}` as const, hook })),
  fc
    .stringMatching(/^i-[0-9a-f]{17}$/)
    .map((i) => ({ kind: 'spot-interruption' as const, actionId: `spot:${i}` as const })),
  hookArb.map((hook) => ({ kind: 'marked-ahead' as const, hook })),
);

const holdArb: fc.Arbitrary<StoredHold> = fc.record(
  {
    kind: fc.constantFrom('target-group', 'classic') as fc.Arbitrary<StoredHold['kind']>,
    id: fc.string({ maxLength: 12 }),
    name: fc.string({ maxLength: 12 }),
    state: fc.constantFrom('draining', 'healthy', 'unknown', 'initial'),
    port: fc.integer({ min: 1, max: 65535 }),
  },
  { requiredKeys: ['kind', 'id', 'name', 'state'] },
);

const surgeArb: fc.Arbitrary<SurgeMark> = fc.record(
  {
    pod: fc.string({ minLength: 1, maxLength: 10 }),
    uid: fc.string({ maxLength: 10 }),
    deployment: fc.option(
      fc.record({
        namespace: fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/),
        name: fc.string({ minLength: 1, maxLength: 10 }),
      }),
      { nil: undefined },
    ),
    restartedAt: fc.string({ maxLength: 24 }),
    atMs: recordTime,
    state: fc.constantFrom('waiting', 'ready', 'timed-out', 'refused') as fc.Arbitrary<SurgeMark['state']>,
    reason: fc.string({ maxLength: 20 }),
  },
  { requiredKeys: ['pod', 'uid', 'deployment', 'atMs', 'state'] },
);

/** A drain record in the form the code writes it (no empty lists, no zero counts: those are written as absent). */
export const drainRecordArb: fc.Arbitrary<DrainRecord> = fc
  .record(
    {
      source: drainSourceArb,
      notifiedAtMs: recordTime,
      startedAtMs: recordTime,
      updatedAtMs: recordTime,
      set: fc.subarray(['exclude-from-load-balancers', 'cordon'] as DrainMark[]),
      priorLabel: fc.string({ maxLength: 8 }),
      aheadOf: fc.stringMatching(/^i-[0-9a-f]{17}$/),
      evicted: fc.integer({ min: 1, max: 10_000 }),
      drained: fc.record({
        atMs: recordTime,
        outcome: fc.constantFrom('drained', 'timed-out') as fc.Arbitrary<'drained' | 'timed-out'>,
      }),
      volumes: fc.array(fc.string({ maxLength: 30 }), { minLength: 1, maxLength: 3 }),
      targets: fc.record({
        atMs: recordTime,
        holds: fc.array(holdArb, { maxLength: 3 }),
        calls: fc.integer({ min: 0, max: 500 }),
      }),
      surges: fc.array(surgeArb, { minLength: 1, maxLength: 3 }),
    },
    { requiredKeys: ['source', 'notifiedAtMs', 'startedAtMs', 'updatedAtMs', 'set'] },
  )
  .map((r) => r as DrainRecord);

/** Objects JSON can carry that trip code treating them as plain values: own properties named like Object's own. */
export const jsonTraps: fc.Arbitrary<unknown> = fc.constantFrom(
  ...[
    '{"toString":1}',
    '{"valueOf":{},"toString":{}}',
    '{"__proto__":{"x":1}}',
    '{"constructor":"x"}',
    '[{"toString":1}]',
  ].map((text) => JSON.parse(text) as unknown),
);

/**
 * Untrusted JSON-ish input: anything JSON can hold, objects whose keys include the prototype's names, objects that
 * cannot be turned into a string, and the shapes of our messages with each field replaced by something else.
 */
export const untrusted: fc.Arbitrary<unknown> = fc.oneof(
  fc.anything({ withObjectString: true, withNullPrototype: true, maxDepth: 3 }),
  fc.jsonValue({ maxDepth: 3 }),
  jsonTraps,
  fc.dictionary(fc.constantFrom(...prototypeNames, 'Records', 'detail-type', 'detail', 'Sns'), fc.jsonValue(), {
    maxKeys: 4,
  }),
);

/** A record's stored text with some of its keys replaced by untrusted values: what a hand edit or another version leaves. */
export function nearRecords(validText: fc.Arbitrary<string>, keys: readonly string[]): fc.Arbitrary<string> {
  return validText.chain((text) =>
    fc
      .dictionary(fc.constantFrom(...keys), untrusted, { minKeys: 1, maxKeys: 3 })
      .map((over) => JSON.stringify({ ...(JSON.parse(text) as object), ...over }) ?? ''),
  );
}
