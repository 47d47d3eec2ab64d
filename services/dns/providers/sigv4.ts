import { createHash, createHmac } from 'node:crypto'

export interface AwsCredentials { accessKeyId: string, secretAccessKey: string }

const sha256 = (data: string) => createHash('sha256').update(data, 'utf8').digest('hex')
const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data, 'utf8').digest()

/** RFC 3986 unreserved characters stay; everything else is %XX, as SigV4 asks. */
function encode (text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`)
}

/**
 * AWS Signature Version 4 headers for one request: the canonical request
 * (method, path, sorted query, signed headers, payload hash), the string to
 * sign under the date/region/service scope, and the key derived from the
 * secret through that scope.
 */
export function signV4 (request: { method: string, url: URL, headers: Record<string, string>, body: string }, credentials: AwsCredentials, scope: { region: string, service: string }, now: Date): Record<string, string> {
  const amzDate = now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '')
  const day = amzDate.slice(0, 8)
  const headers: Record<string, string> = { ...lowerKeys(request.headers), host: request.url.host, 'x-amz-date': amzDate }
  const names = Object.keys(headers).sort()
  const query = [...request.url.searchParams.entries()].map(([key, value]) => `${encode(key)}=${encode(value)}`).sort().join('&')
  const path = request.url.pathname.split('/').map((segment) => encode(decodeURIComponent(segment))).join('/')
  const canonical = [request.method, path, query, ...names.map((name) => `${name}:${headers[name].trim().replace(/\s+/g, ' ')}`), '', names.join(';'), sha256(request.body)].join('\n')
  const credentialScope = `${day}/${scope.region}/${scope.service}/aws4_request`
  const toSign = ['AWS4-HMAC-SHA256', amzDate, credentialScope, sha256(canonical)].join('\n')
  const key = hmac(hmac(hmac(hmac(`AWS4${credentials.secretAccessKey}`, day), scope.region), scope.service), 'aws4_request')
  const signature = createHmac('sha256', key).update(toSign, 'utf8').digest('hex')
  return { ...headers, authorization: `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${credentialScope}, SignedHeaders=${names.join(';')}, Signature=${signature}` }
}

function lowerKeys (headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([key, value]) => [key.toLowerCase(), value]))
}
