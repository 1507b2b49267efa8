// Kubernetes Events: best effort, queued, never a reason to stop (events/ holds every text).
import { type ClusterEvent } from '../model.js';

export interface EventRecorder {
  /** Best effort: never throws and never holds a drain up (queued, dropped on overload). */
  record(event: ClusterEvent): Promise<void>;
  /** Waits (bounded) until queued Events are written; called before an invocation returns. */
  flush?(timeoutMs: number): Promise<void>;
}
