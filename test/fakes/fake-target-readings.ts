// The deployment's shared load-balancer readings in memory (ports/target-readings.ts), as the
// Lease adapter keeps them: merge writes of wants and readings, the turn taken only with the
// version seen. `denied` plays a cluster without the Role (every call refused).
import type {
  LoadBalancerRef,
  ReaderTurn,
  ReadingResult,
  SharedReading,
  TargetReadings,
} from '../../lambda/cluster/ports/target-readings.js';
import { AccessDeniedError } from '../../lambda/shared/errors.js';

export class FakeReadingStore {
  readonly readings = new Map<string, SharedReading>();
  turn: ReaderTurn | undefined;
  denied = false;
  /** Every write, in order: want, publish, take, release, forget. */
  readonly writes: string[] = [];
  private version = 0;

  readingsFor(): TargetReadings {
    const refuse = () => {
      if (this.denied) throw new AccessDeniedError('leases: forbidden', 403);
    };
    const nameOf = (lb: LoadBalancerRef) => `lb-${lb.kind}-${lb.id}`;
    return {
      open: async () => {
        refuse();
        return { current: () => ({ readings: [...this.readings.values()], turn: this.turn }), close: () => {} };
      },
      want: async (lb, untilMs) => {
        refuse();
        this.writes.push(`want ${lb.name}`);
        const name = nameOf(lb);
        this.readings.set(name, { ...(this.readings.get(name) ?? { name, lb }), wantedUntilMs: untilMs });
      },
      publish: async (lb: LoadBalancerRef, reading: ReadingResult) => {
        refuse();
        const name = nameOf(lb);
        this.writes.push(`publish ${name}`);
        const r = this.readings.get(name);
        if (r !== undefined) this.readings.set(name, { ...r, reading });
      },
      takeTurn: async (holder, nowMs, durationMs, seen) => {
        refuse();
        if ((seen === undefined) !== (this.turn === undefined) || (seen && seen.version !== this.turn?.version))
          return 'changed';
        this.writes.push(`take ${holder}`);
        this.turn = { holder, renewedAtMs: nowMs, durationMs, version: String(++this.version) };
        return 'taken';
      },
      releaseTurn: async (holder, seen) => {
        refuse();
        if (this.turn?.holder !== holder || seen.version !== this.turn.version) return;
        this.writes.push(`release ${holder}`);
        this.turn = { ...this.turn, holder: '', version: String(++this.version) };
      },
      forget: async (beforeMs) => {
        refuse();
        const gone = [...this.readings.values()].filter((r) => r.wantedUntilMs < beforeMs).map((r) => r.name);
        for (const name of gone) this.readings.delete(name);
        this.writes.push(...gone.map((n) => `forget ${n}`));
        return gone;
      },
    };
  }
}
