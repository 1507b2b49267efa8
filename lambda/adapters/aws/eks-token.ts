// Mints the bearer token EKS accepts: "k8s-aws-v1." + base64url (no padding) of a presigned
// STS GetCallerIdentity URL whose signed headers include x-k8s-aws-id: <cluster>. The same
// thing `aws eks get-token` does; it needs no network call.
// https://github.com/kubernetes-sigs/aws-iam-authenticator#api-authorization-from-outside-a-cluster
import { Sha256 } from '@aws-crypto/sha256-js';
import { partition } from '@aws-sdk/core/client';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';

export const tokenPrefix = 'k8s-aws-v1.';
export const clusterIdHeader = 'x-k8s-aws-id';
/** The server accepts a token for 15 minutes after X-Amz-Date, whatever X-Amz-Expires says. */
export const tokenLifetimeMs = 15 * 60 * 1000;

export interface TokenOptions {
  readonly clusterName: string;
  readonly region: string;
  readonly credentials: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  readonly signingDate?: Date;
}

/**
 * The regional STS host, from the SDK's own partition data (the same table its endpoint
 * resolution uses), so every partition gets its own DNS suffix: aws and aws-us-gov
 * amazonaws.com, aws-cn amazonaws.com.cn, aws-iso c2s.ic.gov, aws-iso-b sc2s.sgov.gov, the
 * EU Sovereign Cloud amazonaws.eu. aws-iam-authenticator accepts exactly these hosts.
 * https://github.com/kubernetes-sigs/aws-iam-authenticator/blob/master/pkg/token/token.go
 */
export function stsHostname(region: string): string {
  return `sts.${region}.${partition(region).dnsSuffix}`;
}

export async function mintEksToken(options: TokenOptions): Promise<string> {
  const hostname = stsHostname(options.region);
  const signer = new SignatureV4({
    credentials: options.credentials,
    region: options.region,
    service: 'sts',
    sha256: Sha256,
  });
  const presigned = await signer.presign(
    new HttpRequest({
      method: 'GET',
      protocol: 'https:',
      hostname,
      path: '/',
      query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
      headers: { host: hostname, [clusterIdHeader]: options.clusterName },
    }),
    { expiresIn: 60, ...(options.signingDate ? { signingDate: options.signingDate } : {}) },
  );
  const query = Object.entries(presigned.query ?? {})
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
    .join('&');
  const url = `https://${hostname}/?${query}`;
  // Node's base64url never pads, which is what the authenticator expects.
  return tokenPrefix + Buffer.from(url, 'utf8').toString('base64url');
}

/** Caches a token and mints a new one well before the 15 minutes run out. */
export class EksTokenSource {
  private cached: { token: string; mintedMs: number } | undefined;

  constructor(
    private readonly options: Omit<TokenOptions, 'signingDate'>,
    private readonly now: () => number = Date.now,
    private readonly refreshAfterMs = 10 * 60 * 1000,
  ) {}

  /** The server refused the cached token (401): the next call mints a new one. */
  invalidate(): void {
    this.cached = undefined;
  }

  async token(): Promise<string> {
    const now = this.now();
    if (this.cached && now - this.cached.mintedMs < this.refreshAfterMs) return this.cached.token;
    const token = await mintEksToken({ ...this.options, signingDate: new Date(now) });
    this.cached = { token, mintedMs: now };
    return token;
  }
}
