import { createHash, createHmac } from 'node:crypto'
import { createReadStream } from 'node:fs'
import type { AddressGuard } from '../outbound/internal-addresses.js'
import { outboundRequest } from '../outbound/http.js'
import type { BackupS3Config } from './config.js'

/**
 * A PUT to S3-compatible storage, signed with AWS Signature Version 4 (the
 * header form) and no SDK: the payload's SHA-256 is signed, so the service
 * refuses bytes that changed on the way. One PUT holds up to 5 GiB on AWS;
 * larger archives would need a multipart upload, which this does not do.
 */

export interface SignInput {
  method: string
  /** The path as sent, already percent-encoded. */
  path: string
  /** Every header to sign, names in any case; `host` among them. */
  headers: Record<string, string>
  payloadSha256: string
  region: string
  accessKeyId: string
  secretAccessKey: string
  /** `YYYYMMDDTHHMMSSZ`, also sent as `x-amz-date`. */
  amzDate: string
}

const hmac = (key: Buffer | string, data: string): Buffer => createHmac('sha256', key).update(data).digest()
const hex = (data: string): string => createHash('sha256').update(data).digest('hex')

/** The `Authorization` header of a request without a query string. */
export function signV4 (input: SignInput): string {
  const headers = Object.entries(input.headers).map(([name, value]) => [name.toLowerCase(), value.trim().replace(/\s+/g, ' ')] as const)
    .sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)
  const signed = headers.map(([name]) => name).join(';')
  const canonical = [input.method, input.path, '', ...headers.map(([name, value]) => `${name}:${value}`), '', signed, input.payloadSha256].join('\n')
  const day = input.amzDate.slice(0, 8)
  const scope = `${day}/${input.region}/s3/aws4_request`
  const toSign = ['AWS4-HMAC-SHA256', input.amzDate, scope, hex(canonical)].join('\n')
  const key = hmac(hmac(hmac(hmac(`AWS4${input.secretAccessKey}`, day), input.region), 's3'), 'aws4_request')
  return `AWS4-HMAC-SHA256 Credential=${input.accessKeyId}/${scope}, SignedHeaders=${signed}, Signature=${hmac(key, toSign).toString('hex')}`
}

/** RFC 3986 unreserved characters stay, everything else is escaped, `/` between segments kept. */
const encodeKey = (key: string): string => key.split('/').map((part) => encodeURIComponent(part).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)).join('/')

export interface Uploaded { key: string }

/** Puts `file` (of `size` bytes and this SHA-256) as `<prefix><name>`; throws with the service's answer when refused. */
export async function putBackup (config: BackupS3Config, guard: AddressGuard, file: string, name: string, size: number, sha256: string, now: Date): Promise<Uploaded> {
  const key = `${config.prefix}${name}`
  const endpoint = new URL(config.endpoint)
  // Path-style (`/bucket/key`): every S3-compatible server answers it, and a bucket name with dots keeps its certificate.
  const path = `${endpoint.pathname.replace(/\/$/, '')}/${config.bucket}/${encodeKey(key)}`
  const amzDate = now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '')
  const headers = { host: endpoint.host, 'x-amz-content-sha256': sha256, 'x-amz-date': amzDate }
  const authorization = signV4({ method: 'PUT', path, headers, payloadSha256: sha256, region: config.region, accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey, amzDate })
  const result = await outboundRequest(guard, {
    method: 'PUT',
    url: `${endpoint.origin}${path}`,
    headers: { ...headers, authorization, 'content-type': 'application/gzip' },
    body: { length: size, open: () => createReadStream(file) }
  }, { timeoutMs: UPLOAD_TIMEOUT_MS, maxResponseBytes: 64 * 1024 })
  if (result.kind === 'refused') throw new Error(`${result.reason}; allow it in BACKUP_S3_ALLOWED_HOSTS if it is yours`)
  if (result.kind === 'failed') throw new Error(`the upload failed: ${result.reason}`)
  if (result.status < 200 || result.status > 299) {
    const code = /<Code>([^<]{1,100})<\/Code>/.exec(result.body.toString('utf8'))?.[1]
    throw new Error(`the storage answered ${result.status}${code === undefined ? '' : ` (${code})`}`)
  }
  return { key }
}

/** The whole upload's deadline: an hour, room for a few GiB on a slow link. */
export const UPLOAD_TIMEOUT_MS = 60 * 60_000
