// Reading the API server's answer to one request: the JSON body on 2xx (a list item by item
// when asked: list-stream.ts), a KubeApiError with the server's Status otherwise.
import * as http from 'node:http';
import { type Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { createGunzip } from 'node:zlib';
import { KubeApiError, type StatusBody } from './kube-api-error.js';
import { ListStream, type ListItems } from './list-stream.js';

/** Sends the request and reads its answer: the JSON body on 2xx, a KubeApiError otherwise. */
export function answerOf<T>(
  req: http.ClientRequest,
  what: string,
  o: { readonly timeoutMs: number; readonly payload: string | undefined; readonly items?: ListItems<unknown> },
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    req.on('timeout', () => req.destroy(new Error(`${what}: no answer within ${o.timeoutMs} ms`)));
    req.on('error', reject);
    req.on('response', (res) => {
      res.on('error', reject);
      const body = res.headers['content-encoding'] === 'gzip' ? res.pipe(createGunzip()) : res;
      body.on('error', reject);
      const code = res.statusCode ?? 0;
      if (o.items !== undefined && code >= 200 && code < 300)
        return readList(body, new ListStream(o.items), what).then((list) => resolve(list as T), reject);
      const chunks: Buffer[] = [];
      body.on('data', (c: Buffer) => chunks.push(c));
      body.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          parsed = code >= 400 ? { message: text } : undefined;
        }
        if (code >= 200 && code < 300) resolve(parsed as T);
        else reject(new KubeApiError(code, parsed as StatusBody | undefined, res.headers, what));
      });
    });
    req.end(o.payload);
  });
}

/** A list answer fed to its stream chunk by chunk; a malformed one ends the read with the error. */
function readList(body: Readable, list: ListStream<unknown>, what: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const decoder = new StringDecoder('utf8');
    const fail = (error: unknown) => {
      body.destroy();
      reject(new Error(`${what}: malformed list answer`, { cause: error }));
    };
    body.on('error', reject);
    body.on('data', (c: Buffer) => {
      try {
        list.push(decoder.write(c));
      } catch (error) {
        fail(error);
      }
    });
    body.on('end', () => {
      try {
        list.push(decoder.end());
        resolve(list.end());
      } catch (error) {
        fail(error);
      }
    });
  });
}
