// A loopback HTTP proxy in front of the API server that fails a share of requests on
// purpose: some get a 503, some have their connection reset before any answer. The rest are
// forwarded (streams too, so watches work) to the real API server over TLS. An intercept can
// answer a request itself, forward it late, or forward it and cut the connection a while after
// (a dropped watch, an answer lost).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';

export interface FaultCounts {
  requests: number;
  answered503: number;
  reset: number;
  forwarded: number;
  /** Each forwarded answer's body size as it came over the wire (gzipped when it was), in order. */
  answers: { method: string; path: string; bytes: number }[];
}

/**
 * What to do with one request, decided before the random faults: answer it ourselves (a
 * Status body shaped as the API server writes it), or forward it after a delay.
 */
export type Intercept =
  | {
      readonly answer: { readonly status: number; readonly body: unknown; readonly headers?: Record<string, string> };
      readonly delayMs?: number;
    }
  | { readonly forwardAfterMs: number }
  /** Forwarded, then the connection is cut this long after (a watch the server or a load balancer drops). */
  | { readonly forwardThenDropAfterMs: number };

/** An answer shaped as the API server writes a failure (a metav1.Status). */
export function apiFailure(
  code: number,
  reason: string,
  message: string,
  details?: object,
  headers?: Record<string, string>,
): Intercept {
  return {
    answer: {
      status: code,
      headers,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message,
        reason,
        code,
        ...(details ? { details } : {}),
      },
    },
  };
}

export interface FaultProxy {
  readonly url: string;
  readonly counts: FaultCounts;
  stop(): Promise<void>;
}

/** Deterministic, so a failing run can be replayed (mulberry32). */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export async function startFaultProxy(
  target: { server: string; caPem: string },
  rates: {
    unavailable?: number;
    reset?: number;
    seed?: number;
    intercept?: (req: { method: string; url: URL }) => Intercept | undefined;
    /**
     * Rewrites every request body and every answer (a watch's line by line) as text: the soak
     * moves the API server's timestamps into its own time (test/soak/clock.ts). Bodies then go
     * uncompressed.
     */
    rewrite?: { readonly request: (text: string) => string; readonly response: (text: string) => string };
  },
): Promise<FaultProxy> {
  const random = seeded(rates.seed ?? 1);
  const resetRate = rates.reset ?? 0;
  const unavailableRate = rates.unavailable ?? 0;
  const counts: FaultCounts = { requests: 0, answered503: 0, reset: 0, forwarded: 0, answers: [] };
  const upstream = new URL(target.server);
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    counts.requests++;
    const decision = rates.intercept?.({ method: req.method ?? 'GET', url: new URL(req.url ?? '/', 'http://proxy') });
    if (decision && 'answer' in decision) {
      req.resume();
      setTimeout(() => {
        res.writeHead(decision.answer.status, { 'content-type': 'application/json', ...decision.answer.headers });
        res.end(JSON.stringify(decision.answer.body));
      }, decision.delayMs ?? 0);
      return;
    }
    if (decision && 'forwardThenDropAfterMs' in decision) {
      const drop = setTimeout(() => res.destroy(), decision.forwardThenDropAfterMs);
      res.on('close', () => clearTimeout(drop));
      forwardRequest(req, res);
      return;
    }
    if (decision) {
      req.pause();
      setTimeout(() => forwardRequest(req, res), decision.forwardAfterMs);
      return;
    }
    const roll = random();
    if (roll < resetRate) {
      counts.reset++;
      req.socket.destroy();
      return;
    }
    if (roll < resetRate + unavailableRate) {
      counts.answered503++;
      req.resume();
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          code: 503,
          reason: 'ServiceUnavailable',
          message: 'injected by the fault proxy',
        }),
      );
      return;
    }
    forwardRequest(req, res);
  });
  const forwardRequest = (req: IncomingMessage, res: ServerResponse) => {
    if (rates.rewrite) return forwardRewritten(req, res, rates.rewrite);
    counts.forwarded++;
    const forward = httpsRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: req.url,
        method: req.method,
        headers: { ...req.headers, host: upstream.host },
        ca: target.caPem,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        const entry = { method: req.method ?? 'GET', path: req.url ?? '/', bytes: 0 };
        counts.answers.push(entry);
        answer.on('data', (chunk: Buffer) => (entry.bytes += chunk.length));
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    res.on('close', () => forward.destroy());
    req.pipe(forward);
    req.resume();
  };
  const forwardRewritten = (
    req: IncomingMessage,
    res: ServerResponse,
    rewrite: NonNullable<(typeof rates)['rewrite']>,
  ) => {
    counts.forwarded++;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = chunks.length > 0 ? Buffer.from(rewrite.request(Buffer.concat(chunks).toString('utf8'))) : undefined;
      const { 'accept-encoding': _encoding, ...headers } = { ...req.headers, host: upstream.host };
      if (body) headers['content-length'] = String(body.length);
      const forward = httpsRequest(
        { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers, ca: target.caPem },
        (answer) => {
          const entry = { method: req.method ?? 'GET', path: req.url ?? '/', bytes: 0 };
          counts.answers.push(entry);
          answer.setEncoding('utf8');
          if (/[?&]watch=(true|1)(&|$)/.test(req.url ?? '')) {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            let rest = '';
            answer.on('data', (text: string) => {
              entry.bytes += text.length;
              const lines = (rest + text).split('\n');
              rest = lines.pop()!;
              if (lines.length > 0) res.write(`${lines.map(rewrite.response).join('\n')}\n`);
            });
            answer.on('end', () => res.end(rest ? rewrite.response(rest) : undefined));
            return;
          }
          let text = '';
          answer.on('data', (part: string) => (text += part));
          answer.on('end', () => {
            const out = Buffer.from(rewrite.response(text));
            entry.bytes = out.length;
            const { 'transfer-encoding': _chunked, ...answerHeaders } = answer.headers;
            res.writeHead(answer.statusCode ?? 502, { ...answerHeaders, 'content-length': String(out.length) });
            res.end(out);
          });
        },
      );
      forward.on('error', () => res.destroy());
      res.on('close', () => forward.destroy());
      forward.end(body);
    });
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
