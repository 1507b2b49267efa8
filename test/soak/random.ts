// The soak's one source of chance: a seeded generator (mulberry32, as the fault proxy's), so a
// seed gives the same cluster, workloads, timeline and faults every time. Each part of the soak
// draws from its own fork, named, so adding a draw in one part does not move every other.
import { createHash } from 'node:crypto';
import { seeded } from '../cluster/fault-proxy.js';

export class Random {
  private readonly next: () => number;

  constructor(readonly seed: number) {
    this.next = seeded(seed);
  }

  /** An independent generator for one part of the soak, the same for the same seed and name. */
  fork(name: string): Random {
    return new Random(createHash('sha256').update(`${this.seed}/${name}`).digest().readUInt32LE(0));
  }

  /** In [0, 1). */
  fraction(): number {
    return this.next();
  }

  /** An integer in [low, high]. */
  int(low: number, high: number): number {
    return low + Math.floor(this.next() * (high - low + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** Hex digits, for ids that look like AWS's. */
  hex(digits: number): string {
    let out = '';
    while (out.length < digits) out += Math.floor(this.next() * 16).toString(16);
    return out;
  }

  /** A UUID-shaped lifecycle token. */
  uuid(): string {
    const h = this.hex(32);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
  }
}
