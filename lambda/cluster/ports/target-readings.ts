// Load-balancer readings shared by every termination of a deployment (termination/shared-targets.ts):
// what one reading of a target group or Classic Load Balancer said, who wants it read, and whose
// turn it is to read. Kept in the cluster (Leases in the deployment's own namespace), a store we
// own and reconcile; marks/target-reading.ts says how.

/** A load balancer that can hold instances: an ELBv2 target group (by ARN) or a Classic Load Balancer. */
export interface LoadBalancerRef {
  readonly kind: 'target-group' | 'classic';
  readonly id: string;
  readonly name: string;
  readonly port?: number | undefined;
}

/** What one reading said: every instance it has registered (and its state), or why it could not be read. */
export interface ReadingResult {
  readonly atMs: number;
  /** The invocation that read it. */
  readonly by: string;
  readonly targets?: Readonly<Record<string, string>> | undefined;
  readonly failure?: 'denied' | 'unavailable' | undefined;
}

export interface SharedReading {
  /** The object it is kept in. */
  readonly name: string;
  readonly lb: LoadBalancerRef;
  /** A waiting termination wants it read until then. */
  readonly wantedUntilMs: number;
  /** The last reading; absent: never read. */
  readonly reading?: ReadingResult | undefined;
}

/** Whose turn it is to read for everyone: one reader a deployment at a time. */
export interface ReaderTurn {
  readonly holder: string;
  readonly renewedAtMs: number;
  readonly durationMs: number;
  /** The object's resourceVersion: turns are taken conditionally. */
  readonly version: string;
}

export interface TargetReadingsView {
  readonly readings: readonly SharedReading[];
  readonly turn?: ReaderTurn | undefined;
}

export interface TargetReadingsWatch {
  /** As last seen (no request); throws while the view cannot be resumed. */
  current(): TargetReadingsView;
  close(): void;
}

/** A deployment's shared readings. Every write is a merge patch of its own fields, or conditional (the turn). */
export interface TargetReadings {
  /** One list, then a watch: the readings and the turn as they change. */
  open(): Promise<TargetReadingsWatch>;
  /** The load balancer is wanted until then: its object made the first time. */
  want(lb: LoadBalancerRef, untilMs: number): Promise<void>;
  publish(lb: LoadBalancerRef, reading: ReadingResult): Promise<void>;
  /** Takes the turn when free, expired or ours, conditional on the turn as seen (undefined: none yet). */
  takeTurn(
    holder: string,
    nowMs: number,
    durationMs: number,
    seen: ReaderTurn | undefined,
  ): Promise<'taken' | 'changed'>;
  releaseTurn(holder: string, seen: ReaderTurn): Promise<void>;
  /** Readings nobody wanted since `beforeMs` (the reconciler's). */
  forget(beforeMs: number): Promise<readonly string[]>;
}

/** Where a deployment's shared readings are kept (its own namespace, named as it is). */
export interface TargetReadingsSource {
  targetReadings(deployment: string): TargetReadings;
}
