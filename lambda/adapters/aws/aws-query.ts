// AWS's Query protocol, shared by the calls we make without an SDK client (EC2, ELBv2 and
// the Classic ELB API): a SigV4-signed form POST, an XML answer, retries with capped,
// jittered backoff on throttling, 5xx and network failures. Why without the SDK clients:
// ec2-instances.ts and load-balancers.ts say with their numbers.
import { Sha256 } from '@aws-crypto/sha256-js';
import { partition } from '@aws-sdk/core/client';
import { parseXML } from '@aws-sdk/xml-builder';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';
import * as http from 'node:http';
import * as https from 'node:https';
import { ServiceBusyError, TransientError } from '../../shared/errors.js';

export interface QueryOptions {
  readonly region: string;
  readonly credentials: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  /** AWS_ENDPOINT_URL_<SERVICE>, as the SDKs read it; otherwise the partition's regional endpoint. */
  readonly endpoint?: string | undefined;
  readonly timeoutMs?: number;
  readonly maxAttempts?: number;
  readonly sleep?: (ms: number) => Promise<void>;
}

export type Xml = Record<string, unknown>;

/** The elements of an EC2-style list (`<x><item>..</item></x>`) or an awsQuery one (`<x><member>..</member></x>`). */
export const listOf = (v: unknown, element: 'item' | 'member' = 'item'): Xml[] => {
  const list = (v as Xml | undefined)?.[element];
  return list === undefined ? [] : ((Array.isArray(list) ? list : [list]) as Xml[]);
};

export function parseAnswer(xml: string): Xml {
  return parseXML(xml) as Xml;
}

/** An answer that is an error retrying will not fix (access denied, a bad parameter): its code says which. */
export class QueryRefusedError extends TransientError {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
  ) {
    super(message);
    this.name = 'QueryRefusedError';
  }
}

/**
 * Errors as EC2 writes them (`<Response><Errors><Error>`) and as the awsQuery services do
 * (`<ErrorResponse><Error>`).
 */
export function queryErrorOf(xml: string): { code: string; message: string } {
  try {
    const root = parseAnswer(xml);
    const ec2 = ((root['Response'] as Xml | undefined)?.['Errors'] as Xml | undefined)?.['Error'] as Xml | undefined;
    const error = ec2 ?? ((root['ErrorResponse'] as Xml | undefined)?.['Error'] as Xml | undefined);
    return { code: String(error?.['Code'] ?? 'Unknown'), message: String(error?.['Message'] ?? xml.slice(0, 200)) };
  } catch {
    return { code: 'Unknown', message: xml.slice(0, 200) };
  }
}

const retryableCodes = new Set([
  'RequestLimitExceeded',
  'Throttling',
  'ThrottlingException',
  'InternalError',
  'InternalFailure',
  'Unavailable',
  'ServiceUnavailable',
]);

/** AWS_ENDPOINT_URL_<SERVICE> when given, otherwise the partition's regional endpoint of the service. */
export function queryEndpoint(service: string, region: string, override?: string): URL {
  return new URL(override ?? `https://${service}.${region}.${partition(region).dnsSuffix}/`);
}

/** A POST of `body` to the endpoint, signed (SigV4): the headers to send. */
export async function signedPost(
  signer: SignatureV4,
  e: URL,
  headers: Record<string, string>,
  body: string,
): Promise<HttpRequest> {
  const request = new HttpRequest({
    method: 'POST',
    protocol: e.protocol,
    hostname: e.hostname,
    port: e.port ? Number(e.port) : undefined,
    path: e.pathname,
    headers: { host: e.host, ...headers },
    body,
  });
  return (await signer.sign(request)) as HttpRequest;
}

/** One service's Query endpoint: `service` signs (ec2, elasticloadbalancing), `version` is the API's. */
export class AwsQuery {
  private readonly endpoint: URL;
  private readonly signer: SignatureV4;
  private readonly secure: boolean;
  private readonly agent: http.Agent;
  private readonly timeoutMs: number;
  private readonly maxAttempts: number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(
    private readonly api: { readonly service: string; readonly version: string; readonly label: string },
    options: QueryOptions,
  ) {
    this.endpoint = queryEndpoint(api.service, options.region, options.endpoint);
    this.signer = new SignatureV4({
      credentials: options.credentials,
      region: options.region,
      service: api.service,
      sha256: Sha256,
    });
    this.secure = this.endpoint.protocol === 'https:';
    this.agent = this.secure ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxAttempts = options.maxAttempts ?? 4;
    this.sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  }

  /** One call, retried with capped, jittered backoff on throttling, 5xx and network failures. */
  async call(action: string, params: Readonly<Record<string, string>>): Promise<string> {
    const query = { Action: action, Version: this.api.version, ...params };
    for (let attempt = 1; ; attempt++) {
      let failure: string;
      let answered = false;
      let lastCode: string | undefined;
      try {
        const answer = await this.post(query);
        if (answer.status === 200) return answer.body;
        const { code, message } = queryErrorOf(answer.body);
        lastCode = code;
        failure = `HTTP ${answer.status} ${code}: ${message}`;
        if (!(answer.status >= 500 || retryableCodes.has(code)))
          throw new QueryRefusedError(`${this.api.label}:${action} failed: ${failure}`, code, answer.status);
        answered = true;
      } catch (error) {
        if (error instanceof TransientError) throw error;
        failure = (error as Error).message;
      }
      if (attempt >= this.maxAttempts) {
        const message = `${this.api.label}:${action} failed after ${attempt} attempts: ${failure}`;
        throw answered ? new ServiceBusyError(message, { code: lastCode }) : new TransientError(message);
      }
      await this.sleep(Math.round(Math.random() * Math.min(4000, 200 * 2 ** attempt)));
    }
  }

  private async post(form: Record<string, string>): Promise<{ status: number; body: string }> {
    const body = new URLSearchParams(form).toString();
    const e = this.endpoint;
    const signed = await signedPost(
      this.signer,
      e,
      {
        'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
        'content-length': String(Buffer.byteLength(body)),
      },
      body,
    );
    return new Promise((resolve, reject) => {
      const req = (this.secure ? https : http).request(
        e,
        { method: 'POST', headers: signed.headers, agent: this.agent, timeout: this.timeoutMs },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        },
      );
      // Errors name the action of the call; the request names it in the form.
      req.on('timeout', () =>
        req.destroy(new Error(`${this.api.label} ${form['Action']}: no answer within ${this.timeoutMs} ms`)),
      );
      req.on('error', reject);
      req.end(body);
    });
  }
}
