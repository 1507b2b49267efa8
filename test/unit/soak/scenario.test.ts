// The soak's generator, command line and shrinker, without a plane: a seed gives the same
// scenario every time, a longer soak of a seed begins as the shorter one, bad options are named,
// and the shrinker finds the few events a failure needs.
import { describe, expect, it } from 'vitest';
import { parseOptions } from '../../soak/options.js';
import { Random } from '../../soak/random.js';
import { generateScenario } from '../../soak/scenario.js';
import { minimize, withTimeline } from '../../soak/shrink.js';

describe('the soak scenario', () => {
  it('is the same for the same seed, event for event, and another for another seed', () => {
    expect(generateScenario(7, 3)).toEqual(generateScenario(7, 3));
    expect(generateScenario(8, 3)).not.toEqual(generateScenario(7, 3));
  });

  it('of a longer soak begins with the shorter one: the same cluster, workloads and first events', () => {
    const short = generateScenario(1, 3);
    const long = generateScenario(1, 10);
    expect(long.nodes).toEqual(short.nodes);
    expect(long.workloads).toEqual(short.workloads);
    expect(long.timeline.slice(0, 5)).toEqual(short.timeline.slice(0, 5));
    expect(long.timeline.length).toBeGreaterThan(short.timeline.length);
  });

  it('mixes lifecycle events with faults, names some nodes otherwise than EC2 does, and keeps events in time order', () => {
    const kinds = new Set<string>();
    let renamed = 0;
    for (let seed = 1; seed <= 10; seed++) {
      const s = generateScenario(seed, 10);
      for (const e of s.timeline) kinds.add(e.kind);
      renamed += s.nodes.filter((n) => n.name !== n.privateDnsName).length;
      const times = s.timeline.map((e) => e.atMs);
      expect(times).toEqual(times.toSorted((a, b) => a - b));
      expect(s.timeline.every((e) => e.atMs < 10 * 60_000 + 30_000)).toBe(true);
    }
    expect([...kinds].sort()).toEqual(
      expect.arrayContaining([
        'api-faults',
        'aws-throttling',
        'forged',
        'reconcile',
        'scale-in',
        'scale-out',
        'spot-warning',
      ]),
    );
    expect(renamed).toBeGreaterThan(0);
    for (let seed = 1; seed <= 20; seed++) {
      const s = generateScenario(seed, 10);
      const names = [
        ...s.nodes,
        ...s.timeline.flatMap((e) => (e.kind === 'scale-out' ? [e.node] : e.kind === 'refresh' ? e.replacements : [])),
      ];
      expect(new Set(names.map((n) => n.name)).size, `seed ${seed}: node names`).toBe(names.length);
      expect(new Set(names.map((n) => n.instanceId)).size, `seed ${seed}: instance ids`).toBe(names.length);
      expect(
        s.nodes.some((n) => n.spot),
        `seed ${seed}: a Spot instance`,
      ).toBe(true);
    }
  });

  it('draws ids as AWS writes them, the same for the same seed', () => {
    const r = new Random(3);
    expect(r.fork('x').uuid()).toEqual(new Random(3).fork('x').uuid());
    expect(r.fork('x').uuid()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-a[0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(generateScenario(3, 1).nodes.every((n) => /^i-0[0-9a-f]{16}$/.test(n.instanceId))).toBe(true);
  });
});

describe('the soak command line', () => {
  it('takes a seed or seeds, the minutes, and names a bad value with what would do', () => {
    expect(parseOptions(['--seed', '1', '--minutes', '3'])).toEqual({
      seeds: [1],
      minutes: 3,
      shrink: true,
      report: undefined,
      keep: undefined,
    });
    expect(parseOptions(['--seeds', '1,2,5', '--no-shrink'])).toMatchObject({ seeds: [1, 2, 5], shrink: false });
    expect(() => parseOptions(['--seed', 'x'])).toThrow(
      '--seed x is invalid: expected an integer from 0 to 4294967295',
    );
    expect(() => parseOptions(['--minutes', '0'])).toThrow('--minutes 0 is invalid: expected a number from 0.5 to 600');
    expect(() => parseOptions(['--seed'])).toThrow(/--seed needs a value/);
    expect(() => parseOptions(['--fast'])).toThrow(/unknown option --fast; usage: npm run soak -- --seed/);
  });
});

describe('the soak shrinker', () => {
  it('finds the two events a failure needs among many, within its budget of runs', async () => {
    const events = Array.from({ length: 16 }, (_, i) => i);
    const fails = async (candidate: readonly number[]) => candidate.includes(3) && candidate.includes(11);
    const { items, tries } = await minimize(events, fails, 40);
    expect(items).toEqual([3, 11]);
    expect(tries).toBeLessThanOrEqual(40);
  });

  it('stops at its budget with the shortest failing timeline found so far', async () => {
    const events = Array.from({ length: 16 }, (_, i) => i);
    const { items, tries } = await minimize(events, async (c) => c.includes(3), 2);
    expect(tries).toBe(2);
    expect(items.length).toBeLessThan(16);
    expect(items).toContain(3);
  });

  it('runs a shrunk timeline only as long as its last event needs', () => {
    const s = generateScenario(1, 10);
    const early = s.timeline.filter((e) => e.atMs < 60_000);
    expect(withTimeline(s, early).minutes).toBeLessThanOrEqual(1.5);
    expect(withTimeline(s, early).timeline).toEqual(early);
  });
});
