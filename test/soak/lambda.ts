// Lambda, as the soak plays it: containers (container.ts, a worker thread each) reused while
// free and started cold when none is, an invocation killed when its time is up or when the fault
// plan says so, and the asynchronous invocation SNS and EventBridge make: delivered after a delay,
// sometimes twice, a failed attempt retried twice with the same request id, then given up (the
// failed-notifications queue). Lambda waits 1 and 2 minutes between attempts; the soak waits
// retryDelaysMs (seconds), so a short soak sees retries.
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { Worker } from 'node:worker_threads';
import type { ContainerData, ContainerReply, InvokeMessage } from './container.js';

type InvocationReply = Exclude<ContainerReply, { readonly ready: true }>;
import type { DeliveryFate } from './scenario.js';

export interface InvocationRecord {
  readonly label: string;
  readonly requestId: string;
  readonly attempt: number;
  readonly startedMs: number;
  endedMs?: number;
  outcome?: 'ok' | 'failed' | 'killed' | 'timed-out';
  result?: unknown;
  error?: string;
  /** The container was started for it (a cold start). */
  readonly cold: boolean;
}

export interface DeliveryRecord {
  readonly label: string;
  readonly copy: number;
  readonly attempts: InvocationRecord[];
  /** Every attempt failed: Lambda gave up (the failed-notifications queue). */
  gaveUp: boolean;
  lost: boolean;
}

export interface LambdaOptions {
  readonly env: Readonly<Record<string, string>>;
  readonly clock: SharedArrayBuffer;
  readonly invocationSeconds: number;
  readonly maxContainers: number;
  readonly retryDelaysMs: readonly [number, number];
  /** Each log line a handler wrote (Powertools JSON), parsed. */
  readonly onLog: (entry: Record<string, unknown>) => void;
  readonly realNow: () => number;
}

interface Container {
  readonly worker: Worker;
  readonly ready: Promise<void>;
  busy: boolean;
  pending: Map<number, (reply: InvocationReply) => void>;
  dead: boolean;
}

export class LambdaModel {
  readonly invocations: InvocationRecord[] = [];
  readonly deliveries: DeliveryRecord[] = [];
  private readonly containers: Container[] = [];
  private readonly waiting: (() => void)[] = [];
  private inFlight = 0;
  private scheduled = 0;
  private nextId = 0;
  private stopped = false;
  containersStarted = 0;

  constructor(private readonly o: LambdaOptions) {}

  /** Nothing running and nothing about to be delivered or retried. */
  idle(): boolean {
    return this.inFlight === 0 && this.scheduled === 0;
  }

  /** One synchronous invocation (a termination policy call), or one attempt of a delivery. */
  async invoke(
    event: unknown,
    o: { label: string; requestId?: string; attempt?: number; killAfterMs?: number; remainingMs?: number },
  ): Promise<InvocationRecord> {
    this.inFlight++;
    try {
      const container = await this.acquire();
      const remainingMs = o.remainingMs ?? this.o.invocationSeconds * 1000;
      const record: InvocationRecord = {
        label: o.label,
        requestId: o.requestId ?? randomUUID(),
        attempt: o.attempt ?? 1,
        startedMs: this.o.realNow(),
        cold: container.cold,
      };
      this.invocations.push(record);
      const reply = await this.run(container.container, event, remainingMs, record.requestId, o.killAfterMs);
      record.endedMs = this.o.realNow();
      if ('killed' in reply) record.outcome = reply.killed;
      else if (reply.ok) Object.assign(record, { outcome: 'ok', result: reply.result });
      else Object.assign(record, { outcome: 'failed', error: reply.error });
      return record;
    } finally {
      this.inFlight--;
    }
  }

  /** An asynchronous invocation: SNS's or EventBridge's delivery, with the fault plan's fate. */
  deliver(event: unknown, fate: DeliveryFate, label: string): void {
    if (fate.lost) {
      this.deliveries.push({ label, copy: 0, attempts: [], gaveUp: true, lost: true });
      return;
    }
    [0, ...fate.duplicateDelaysMs].forEach((extraMs, copy) => {
      const delivery: DeliveryRecord = { label, copy, attempts: [], gaveUp: false, lost: false };
      this.deliveries.push(delivery);
      void this.later(fate.delayMs + extraMs, () => this.attempts(event, fate, delivery));
    });
  }

  private async attempts(event: unknown, fate: DeliveryFate, delivery: DeliveryRecord): Promise<void> {
    const requestId = randomUUID();
    for (let attempt = 1; attempt <= 3 && !this.stopped; attempt++) {
      // Only the first copy's attempts are killed by the plan; a duplicate is delivered as it comes.
      const killAfterMs = delivery.copy === 0 ? fate.killAfterMs[attempt - 1] : undefined;
      const record = await this.invoke(event, { label: delivery.label, requestId, attempt, killAfterMs });
      delivery.attempts.push(record);
      if (record.outcome === 'ok') return;
      if (attempt < 3) await this.wait(this.o.retryDelaysMs[attempt - 1]!);
    }
    delivery.gaveUp = true;
  }

  private async later(ms: number, run: () => Promise<void>): Promise<void> {
    this.scheduled++;
    try {
      await this.wait(ms);
      this.inFlight++;
    } finally {
      this.scheduled--;
    }
    try {
      await run();
    } finally {
      this.inFlight--;
    }
  }

  private async wait(ms: number): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, ms));
  }

  private async acquire(): Promise<{ container: Container; cold: boolean }> {
    for (;;) {
      if (this.stopped) throw new Error('Lambda stopped');
      const free = this.containers.find((c) => !c.busy && !c.dead);
      if (free) {
        free.busy = true;
        return { container: free, cold: false };
      }
      if (this.containers.filter((c) => !c.dead).length < this.o.maxContainers) {
        const container = this.start();
        container.busy = true;
        await container.ready;
        return { container, cold: true };
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  private release(container: Container): void {
    container.busy = false;
    this.waiting.shift()?.();
  }

  private start(): Container {
    this.containersStarted++;
    const data: ContainerData = { env: this.o.env, clock: this.o.clock };
    const worker = new Worker(new URL('./container.ts', import.meta.url), {
      workerData: data,
      env: { ...this.o.env },
      stdout: true,
      stderr: true,
    });
    for (const stream of [worker.stdout, worker.stderr]) {
      createInterface({ input: stream }).on('line', (line) => {
        if (!line.startsWith('{')) return;
        try {
          this.o.onLog(JSON.parse(line) as Record<string, unknown>);
        } catch {
          // A line that is not one of the handler's JSON log lines.
        }
      });
    }
    let markReady: () => void = () => {};
    const container: Container = {
      worker,
      ready: new Promise<void>((resolve) => (markReady = resolve)),
      busy: false,
      pending: new Map(),
      dead: false,
    };
    worker.on('message', (reply: ContainerReply) => {
      if ('ready' in reply) return markReady();
      container.pending.get(reply.id)?.(reply);
      container.pending.delete(reply.id);
    });
    const die = (error: string) => {
      container.dead = true;
      markReady();
      for (const [id, resolve] of container.pending) resolve({ id, ok: false, error });
      container.pending.clear();
    };
    worker.on('error', (error) => die(`the container failed: ${error.message}`));
    worker.on('exit', () => die('the container exited'));
    this.containers.push(container);
    return container;
  }

  /** Runs one invocation in the container; kills the container at the kill time or when the time is up. */
  private run(
    container: Container,
    event: unknown,
    remainingMs: number,
    requestId: string,
    killAfterMs: number | undefined,
  ): Promise<InvocationReply | { killed: 'killed' | 'timed-out' }> {
    const id = ++this.nextId;
    return new Promise((resolve) => {
      let settled = false;
      const finish = (value: InvocationReply | { killed: 'killed' | 'timed-out' }) => {
        if (settled) return;
        settled = true;
        clearTimeout(killTimer);
        clearTimeout(timeoutTimer);
        if ('killed' in value) {
          container.dead = true;
          void container.worker.terminate();
        }
        this.release(container);
        resolve(value);
      };
      const killTimer =
        killAfterMs === undefined ? undefined : setTimeout(() => finish({ killed: 'killed' }), killAfterMs);
      const timeoutTimer = setTimeout(() => finish({ killed: 'timed-out' }), remainingMs);
      if (container.dead) return finish({ id, ok: false, error: 'the container is gone' });
      container.pending.set(id, finish);
      container.worker.postMessage({ id, event, remainingMs, requestId } satisfies InvokeMessage);
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const resolve of this.waiting.splice(0)) resolve();
    await Promise.all(this.containers.map((c) => c.worker.terminate()));
  }
}
