// Events go through a bounded queue with one writer (so they land in the order they were
// made): writing one (and retrying it under 429) never holds an eviction worker or a phase
// up; on overload the oldest wait and new ones are dropped, and the log still has every line.
import type { ClusterEvent } from '../../cluster/model.js';
import type { EventRecorder } from '../../cluster/ports/event-recorder.js';
import type { Log } from '../../shared/log.js';
import { classify } from './api-errors.js';
import { createEventQueue } from './event-queue.js';
import type { KubeHttp } from './kube-http.js';
import { reportingComponent, toCoreEvent } from './object-codecs.js';

export function createEventWriter(kube: KubeHttp, log: Log): Required<EventRecorder> {
  const instance = process.env['AWS_LAMBDA_FUNCTION_NAME'] ?? reportingComponent;
  const queue = createEventQueue(
    async (event: ClusterEvent) => {
      const namespace = event.regarding.namespace ?? 'default';
      try {
        // Each Event has a unique name, so a retried create is at worst a 409.
        await kube.request('POST', `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`, {
          body: toCoreEvent(event, instance),
          retry: true,
        });
      } catch (error) {
        log.warn('could not write Kubernetes Event', {
          reason: event.reason,
          error: classify(error, `write Event ${event.reason}`),
        });
      }
    },
    {
      capacity: 200,
      concurrency: 1,
      onDrop: (event, dropped) =>
        log.warn('Kubernetes Event dropped: too many queued', { reason: event.reason, dropped }),
    },
  );
  return {
    record: async (event) => queue.push(event),
    flush: (timeoutMs) => queue.flush(timeoutMs),
  };
}
