import { createHash, createHmac } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { pipeline } from 'node:stream/promises'
import type { AddressGuard } from '../outbound/internal-addresses.js'
import { outboundRequest } from '../outbound/http.js'
import type { BackupS3Config } from './config.js'

/**
 * A PUT to S3-compatible storage, signed with AWS Signature Version 4 (the
 * header form) and no SDK: the payload's SHA-256 is signed, so the service
 * refuses bytes that changed on the way. An archive larger than one part
 * (64 MiB) goes as a multipart upload, each part signed with its own
 * SHA-256; one that fails is aborted, so no half-upload is left billed.
 */

export interface SignInput {
  method: string
  /** The path as sent, already percent-encoded. */
  path: string
  /** The query as sent, already canonical (names sorted, each `name=value` percent-encoded); none by default. */
  query?: string
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

/** The `Authorization` header of a request. */
export function signV4 (input: SignInput): string {
  const headers = Object.entries(input.headers).map(([name, value]) => [name.toLowerCase(), value.trim().replace(/\s+/g, ' ')] as const)
    .sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)
  const signed = headers.map(([name]) => name).join(';')
  const canonical = [input.method, input.path, input.query ?? '', ...headers.map(([name, value]) => `${name}:${value}`), '', signed, input.payloadSha256].join('\n')
  const day = input.amzDate.slice(0, 8)
  const scope = `${day}/${input.region}/s3/aws4_request`
  const toSign = ['AWS4-HMAC-SHA256', input.amzDate, scope, hex(canonical)].join('\n')
  const key = hmac(hmac(hmac(hmac(`AWS4${input.secretAccessKey}`, day), input.region), 's3'), 'aws4_request')
  return `AWS4-HMAC-SHA256 Credential=${input.accessKeyId}/${scope}, SignedHeaders=${signed}, Signature=${hmac(key, toSign).toString('hex')}`
}

/** RFC 3986 unreserved characters stay, everything else is escaped, `/` between segments kept. */
const encodeKey = (key: string): string => key.split('/').map((part) => encodeURIComponent(part).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)).join('/')

export interface Uploaded { key: string }

const MIB = 1024 * 1024
/** The part size of a multipart upload: S3 takes parts of 5 MiB to 5 GiB, and at most 10,000 of them. */
export const PART_BYTES = 64 * MIB
const MAX_PARTS = 10_000

/** S3 takes at most 10,000 parts: an archive too large for that many of `smallest` gets larger parts (whole MiB). */
export function partSize (size: number, smallest = PART_BYTES): number {
  return Math.max(smallest, Math.ceil(size / MAX_PARTS / MIB) * MIB)
}

type Call = (method: string, query: Record<string, string>, body: { sha256: string, length: number, open?: () => ReturnType<typeof createReadStream>, text?: string }) => Promise<{ headers: Record<string, string | string[] | undefined>, body: string }>

/**
 * Puts `file` (of `size` bytes and this SHA-256) as `<prefix><name>`: one PUT
 * up to `partBytes`, a multipart upload beyond; throws with the service's
 * answer when refused.
 */
export async function putBackup (config: BackupS3Config, guard: AddressGuard, file: string, name: string, size: number, sha256: string, now: Date, smallestPart = PART_BYTES): Promise<Uploaded> {
  const partBytes = partSize(size, smallestPart)
  const key = `${config.prefix}${name}`
  const endpoint = new URL(config.endpoint)
  // Path-style (`/bucket/key`): every S3-compatible server answers it, and a bucket name with dots keeps its certificate.
  const path = `${endpoint.pathname.replace(/\/$/, '')}/${config.bucket}/${encodeKey(key)}`
  // Each request is signed at its own time (S3 refuses one signed over 15 minutes before it arrives): `now` moved on
  // by the time the upload has taken so far.
  const startedMs = Date.now()
  const call: Call = async (method, params, body) => {
    const amzDate = new Date(now.getTime() + Date.now() - startedMs).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '')
    const query = Object.keys(params).sort().map((name) => `${encodeURIComponent(name)}=${encodeURIComponent(params[name])}`).join('&')
    const headers = { host: endpoint.host, 'x-amz-content-sha256': body.sha256, 'x-amz-date': amzDate }
    const authorization = signV4({ method, path, query, headers, payloadSha256: body.sha256, region: config.region, accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey, amzDate })
    const open = body.open
    const result = await outboundRequest(guard, {
      method,
      url: `${endpoint.origin}${path}${query === '' ? '' : `?${query}`}`,
      headers: { ...headers, authorization, 'content-type': body.text === undefined ? 'application/gzip' : 'application/xml' },
      body: open !== undefined ? { length: body.length, open } : body.text
    }, { timeoutMs: UPLOAD_TIMEOUT_MS, maxResponseBytes: 64 * 1024 })
    if (result.kind === 'refused') throw new Error(`${result.reason}; allow it in BACKUP_S3_ALLOWED_HOSTS if it is yours`)
    if (result.kind === 'failed') throw new Error(`the upload failed: ${result.reason}`)
    const text = result.body.toString('utf8')
    const code = /<Code>([^<]{1,100})<\/Code>/.exec(text)?.[1]
    // A completion can answer 200 and still fail, with an <Error> body.
    if (result.status < 200 || result.status > 299 || /<Error>/.test(text)) throw new Error(`the storage answered ${result.status}${code === undefined ? '' : ` (${code})`}`)
    return { headers: result.headers, body: text }
  }
  if (size <= partBytes) {
    await call('PUT', {}, { sha256, length: size, open: () => createReadStream(file) })
    return { key }
  }
  const started = await call('POST', { uploads: '' }, { sha256: EMPTY_SHA256, length: 0, text: '' })
  const uploadId = /<UploadId>([^<]{1,1024})<\/UploadId>/.exec(started.body)?.[1]
  if (uploadId === undefined) throw new Error('the storage started no multipart upload (no UploadId in its answer)')
  try {
    const parts: string[] = []
    for (let start = 0, number = 1; start < size; start += partBytes, number++) {
      const end = Math.min(start + partBytes, size) - 1
      const range = (): ReturnType<typeof createReadStream> => createReadStream(file, { start, end })
      const hash = createHash('sha256')
      await pipeline(range(), hash)
      const answer = await call('PUT', { partNumber: String(number), uploadId }, { sha256: hash.digest('hex'), length: end - start + 1, open: range })
      const etag = answer.headers.etag
      if (typeof etag !== 'string') throw new Error(`the storage gave part ${number} no ETag`)
      parts.push(`<Part><PartNumber>${number}</PartNumber><ETag>${escapeXml(etag)}</ETag></Part>`)
    }
    const complete = `<CompleteMultipartUpload>${parts.join('')}</CompleteMultipartUpload>`
    await call('POST', { uploadId }, { sha256: createHash('sha256').update(complete).digest('hex'), length: Buffer.byteLength(complete), text: complete })
  } catch (error) {
    await call('DELETE', { uploadId }, { sha256: EMPTY_SHA256, length: 0 }).catch(() => {})
    throw error
  }
  return { key }
}

const EMPTY_SHA256 = createHash('sha256').update('').digest('hex')
const escapeXml = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

/** The whole upload's deadline: an hour, room for a few GiB on a slow link. */
export const UPLOAD_TIMEOUT_MS = 60 * 60_000
