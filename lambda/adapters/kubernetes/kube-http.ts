// A small Kubernetes REST client over node:https for the handful of calls a drain makes.
//
// Why not @kubernetes/client-node's generated CoreV1Api at run time: bundled, it brings
// every API group, every model and undici (2.3 MB), and compiling that took about 540 ms
// of the cold start on this machine (npm run bench). These six endpoints need none of it.
// client-node still provides the object types (kubeconfig mode has its own reader: kubeconfig.ts).
import * as http from 'node:http';
import * as https from 'node:https';
import { createInterface } from 'node:readline';
import { KubeApiError, isRetryable, backoffMs } from './kube-api-error.js';
import { answerOf } from './kube-answer.js';
import type { ListItems } from './list-stream.js';

/** Where the API server is and how to reach it; called before every request. */
export interface KubeEndpoint {
  readonly server: string;
  /** TLS material and headers (Authorization) for the next request. */
  requestOptions(): Promise<TlsAndHeaders>;
  /**
   * The server answered 401: forget cached credentials so the next request mints fresh ones
   * (an EKS token the server no longer accepts, an access entry that was still propagating).
   */
  refreshCredentials?(): void;
}

export type TlsAndHeaders = Pick<https.RequestOptions, 'ca' | 'cert' | 'key' | 'rejectUnauthorized' | 'servername'> & {
  readonly headers?: Readonly<Record<string, string>>;
};

export interface RequestOptions {
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>>;
  readonly body?: unknown;
  readonly contentType?: string;
  /** Ask for a gzipped answer (large lists only). */
  readonly compressed?: boolean;
  /** The Accept header (default application/json): a list of names only asks for a Table. */
  readonly accept?: string;
  /**
   * Retry network failures, timeouts, 429 and 5xx in place. Default: yes, except for POST,
   * whose answers can carry meaning the caller handles itself (an eviction's 429 or 500).
   */
  readonly retry?: boolean;
  /**
   * A list read item by item as it arrives (list-stream.ts): the answer is the list with its
   * items as `itemOf` made them. A retry reads the page again from its start.
   */
  readonly items?: ListItems<unknown>;
}

export interface WatchHandle {
  abort(): void;
}

export interface KubeHttp {
  request<T>(method: string, path: string, options?: RequestOptions): Promise<T>;
  /** Streams watch events (one JSON object a line) until the server or abort ends it. */
  watch(
    path: string,
    query: RequestOptions['query'],
    onEvent: (event: { type: string; object: unknown }) => void,
    onEnd: (error?: Error) => void,
  ): WatchHandle;
}

export interface KubeHttpOptions {
  readonly userAgent: string;
  /** A request that sends nothing back for this long is aborted. */
  readonly timeoutMs: number;
  /** Tries per request, the first included, for retryable failures (default 5). */
  readonly maxAttempts?: number;
  /** Told about each retry (logging, the fault test's counts). */
  readonly onRetry?: (what: string, attempt: number, error: Error, delayMs: number) => void;
  /** Waits between tries; tests replace it. */
  readonly sleep?: (ms: number) => Promise<void>;
  readonly random?: () => number;
}

export function createKubeHttp(endpoint: KubeEndpoint, options: KubeHttpOptions): KubeHttp {
  const client = new KubeClient(endpoint, options);
  return {
    request: (method, path, o) => client.request(method, path, o),
    watch: (path, query, onEvent, onEnd) => client.watch(path, query, onEvent, onEnd),
  };
}

type WatchEvent = { type: string; object: unknown };

class KubeClient {
  private readonly base: URL;
  private readonly secure: boolean;
  private readonly agent: http.Agent;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(
    private readonly endpoint: KubeEndpoint,
    private readonly options: KubeHttpOptions,
  ) {
    this.base = new URL(endpoint.server);
    this.secure = this.base.protocol === 'https:';
    // Connections are reused across the many evictions of one drain.
    this.agent = this.secure
      ? new https.Agent({ keepAlive: true, maxSockets: 64 })
      : new http.Agent({ keepAlive: true, maxSockets: 64 });
    this.sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  }

  async request<T>(method: string, path: string, o: RequestOptions = {}): Promise<T> {
    const retry = o.retry ?? method !== 'POST';
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once<T>(method, path, o);
      } catch (error) {
        const unauthorized =
          error instanceof KubeApiError && error.statusCode === 401 && this.endpoint.refreshCredentials !== undefined;
        if (unauthorized) this.endpoint.refreshCredentials?.();
        if ((!retry && !unauthorized) || attempt >= (this.options.maxAttempts ?? 5) || !isRetryable(error, method))
          throw error;
        const delayMs = backoffMs(attempt, error, this.options.random ?? Math.random);
        this.options.onRetry?.(`${method} ${path}`, attempt, error as Error, delayMs);
        await this.sleep(delayMs);
      }
    }
  }

  watch(
    path: string,
    query: RequestOptions['query'],
    onEvent: (event: WatchEvent) => void,
    onEnd: (error?: Error) => void,
  ): WatchHandle {
    let ended = false;
    let req: http.ClientRequest | undefined;
    const end = (error?: Error) => {
      if (ended) return;
      ended = true;
      req?.destroy();
      onEnd(error);
    };
    // The server closes a watch after its timeoutSeconds; idle out only well after that, so
    // a quiet watch ends cleanly instead of being torn down as a failure.
    const serverSeconds = Number(query?.['timeoutSeconds']);
    const idleMs =
      Number.isFinite(serverSeconds) && serverSeconds > 0
        ? Math.max(this.options.timeoutMs, (serverSeconds + 15) * 1000)
        : this.options.timeoutMs;
    void this.open('GET', this.url(path, { ...query, watch: true }), {}, undefined, idleMs)
      .then((r) => {
        req = r;
        // Closed before the request went out: destroying it emits "socket hang up", which must
        // have a listener or it is an uncaught exception (a watch opened and closed at once).
        if (ended) return void r.on('error', () => {}).destroy();
        r.on('timeout', () => end(new Error(`watch ${path}: idle for ${idleMs} ms`)));
        r.on('error', (e) => end(e));
        r.on('response', (res) => this.stream(path, res, onEvent, end));
        r.end();
      })
      .catch((e: Error) => end(e));
    return { abort: () => end() };
  }

  /** One watch event a line, until the server ends the stream or we abort it. */
  private stream(
    path: string,
    res: http.IncomingMessage,
    onEvent: (event: WatchEvent) => void,
    end: (error?: Error) => void,
  ): void {
    // An aborted stream errors with ECONNRESET "aborted": expected, and ours to end.
    res.on('error', (e) => end(e));
    if ((res.statusCode ?? 0) !== 200) {
      if (res.statusCode === 401) this.endpoint.refreshCredentials?.();
      res.resume();
      return end(new KubeApiError(res.statusCode ?? 0, undefined, res.headers, `watch ${path}`));
    }
    const lines = createInterface({ input: res });
    // readline re-emits the input's errors on itself.
    lines.on('error', (e) => end(e));
    lines.on('line', (line) => {
      if (!line.trim()) return;
      try {
        onEvent(JSON.parse(line) as WatchEvent);
      } catch {
        /* a torn line at abort: the next list/watch recovers */
      }
    });
    lines.on('close', () => end());
  }

  private url(path: string, query: RequestOptions['query']): URL {
    const u = new URL(this.base.pathname.replace(/\/$/, '') + path, this.base);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) u.searchParams.set(k, String(v));
    return u;
  }

  /** `payload` is the body already serialised (once per request, not per header and write). */
  private async open(
    method: string,
    target: URL,
    o: RequestOptions,
    payload?: string,
    timeoutMs = this.options.timeoutMs,
  ): Promise<http.ClientRequest> {
    const tls = await this.endpoint.requestOptions();
    const headers: http.OutgoingHttpHeaders = {
      ...tls.headers,
      Accept: o.accept ?? 'application/json',
      'User-Agent': this.options.userAgent,
    };
    if (payload !== undefined) {
      headers['Content-Type'] = o.contentType ?? 'application/json';
      // Always framed: Node sends a DELETE body neither chunked nor with a length unless told,
      // and the server then reads it as the next request on the kept-alive connection.
      headers['Content-Length'] = Buffer.byteLength(payload);
    }
    return (this.secure ? https : http).request(target, {
      ...tls,
      method,
      headers,
      agent: this.agent,
      timeout: timeoutMs,
    });
  }

  private async once<T>(method: string, path: string, o: RequestOptions): Promise<T> {
    const what = `${method} ${path}`;
    const payload = o.body === undefined ? undefined : JSON.stringify(o.body);
    const req = await this.open(method, this.url(path, o.query), o, payload);
    // The API server gzips answers over 128 KiB when asked (APIResponseCompression, on by
    // default). Asked only where it pays: a page of 100 node objects (1.5 MB of JSON) shrinks
    // ~5x on the wire. A node's own pods are not worth the CPU on both ends (measured: the
    // bundle's peak RSS draining 110 pods 89.5 MiB without, 93.1 MiB with).
    // https://kubernetes.io/docs/reference/command-line-tools-reference/feature-gates/
    if (o.compressed) req.setHeader('Accept-Encoding', 'gzip');
    return answerOf<T>(req, what, { timeoutMs: this.options.timeoutMs, payload, items: o.items });
  }
}
