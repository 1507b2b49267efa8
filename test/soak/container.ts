// One Lambda container of the soak: a worker thread that builds the real handler
// (lambda/runtime.ts, what the function runs) once from the function's variables and runs one
// invocation at a time, on soak time (clock.ts). The soak kills a container to kill its
// invocation at a random point, as a crash or Lambda's timeout would; Lambda then starts another.
import { parentPort, workerData } from 'node:worker_threads';
import { installSoakClock } from './clock.js';

export interface ContainerData {
  readonly env: Readonly<Record<string, string>>;
  readonly clock: SharedArrayBuffer;
}

export interface InvokeMessage {
  readonly id: number;
  readonly event: unknown;
  readonly remainingMs: number;
  readonly requestId: string;
}

export type ContainerReply =
  | { readonly ready: true }
  | { readonly id: number; readonly ok: true; readonly result: unknown }
  | { readonly id: number; readonly ok: false; readonly error: string };

const data = workerData as ContainerData;
installSoakClock(data.clock);
const { createRuntime } = await import('../../lambda/runtime.js');
const handler = createRuntime(data.env);
const port = parentPort!;
port.on('message', (m: InvokeMessage) => {
  const end = Date.now() + m.remainingMs;
  handler(m.event, { getRemainingTimeInMillis: () => end - Date.now(), awsRequestId: m.requestId }).then(
    (result) => port.postMessage({ id: m.id, ok: true, result } satisfies ContainerReply),
    (error: unknown) => port.postMessage({ id: m.id, ok: false, error: String(error) } satisfies ContainerReply),
  );
});
port.postMessage({ ready: true } satisfies ContainerReply);
