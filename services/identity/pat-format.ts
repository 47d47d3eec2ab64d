import { randomBytes } from 'node:crypto'
import { commonErrors } from '../platform/errors.js'
import { identityErrors } from './errors.js'
import { hashToken } from '../platform/crypto.js'
import type { Clock } from '../platform/clock.js'
import type { Document, Store, WithId } from '../store/types.js'
import { BoundedMap } from '../cache/bounded-map.js'
import { isoString, isoStringOrNull } from '../platform/iso-dates.js'

/**
 * Personal access tokens look like `<prefix>_<30 random base62><6 checksum>`:
 * the fixed prefix lets secret scanners recognise a leaked token, and the
 * CRC32 checksum lets a typo be refused before any lookup reaches the Store.
 */
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const RANDOM_LENGTH = 30
const CHECKSUM_LENGTH = 6
const UNDERSCORE = 0x5f

// Int32Array keeps the table in small integers; a plain array of values above 2^31 holds boxed doubles.
const CRC_TABLE = new Int32Array(256)
for (let n = 0; n < 256; n++) {
  let c = n
  for (let k = 0; k < 8; k++) c = (c & 1) !== 0 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  CRC_TABLE[n] = c
}

/** CRC32 of the ASCII characters of `text` from `start` to `end` (token bodies are base62). */
function crc32 (text: string, start = 0, end = text.length): number {
  let crc = -1
  for (let i = start; i < end; i++) crc = CRC_TABLE[(crc ^ text.charCodeAt(i)) & 0xff] ^ (crc >>> 8)
  return (crc ^ -1) >>> 0
}

// A table rather than indexOf, so checking a token's alphabet is one load per character.
const BASE62_VALUE = new Int8Array(128).fill(-1)
for (let i = 0; i < 62; i++) BASE62_VALUE[BASE62.charCodeAt(i)] = i

function base62 (value: number, width: number): string {
  let out = ''
  let rest = value
  for (let i = 0; i < width; i++) { out = BASE62[rest % 62] + out; rest = Math.floor(rest / 62) }
  return out
}

function randomBase62 (length: number): string {
  // Rejection sampling keeps every character equally likely.
  let out = ''
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62]
    }
  }
  return out
}

export function createPat (prefix: string): string {
  const body = randomBase62(RANDOM_LENGTH)
  return `${prefix}_${body}${base62(crc32(body), CHECKSUM_LENGTH)}`
}

/**
 * Whether `token` is shaped like a PAT of this prefix with a valid checksum.
 * Every request carrying a token asks this first, so it walks the string
 * once and builds nothing.
 */
export function isWellFormedPat (token: string, prefix: string): boolean {
  const start = prefix.length + 1
  if (token.length !== start + RANDOM_LENGTH + CHECKSUM_LENGTH || !token.startsWith(prefix) || token.charCodeAt(prefix.length) !== UNDERSCORE) return false
  for (let i = start; i < token.length; i++) {
    const code = token.charCodeAt(i)
    if (code >= 128 || BASE62_VALUE[code] < 0) return false
  }
  // The checksum is the body's CRC32 in base62, most significant digit first.
  let rest = crc32(token, start, start + RANDOM_LENGTH)
  for (let i = token.length - 1; i >= start + RANDOM_LENGTH; i--) {
    if (BASE62_VALUE[token.charCodeAt(i)] !== rest % 62) return false
    rest = Math.floor(rest / 62)
  }
  return true
}

/** What a listing may show: enough to recognise a token, never enough to use it. */
export function patHint (token: string, prefix: string): string {
  return `${prefix}_…${token.slice(-4)}`
}

// lastUsedAt is written at most this often per token, so a busy token is not a write per request.
const LAST_USED_RESOLUTION_MS = 60_000

// Every request with a PAT or a service token hashes it; the same tokens come again and again.
const hashes = new BoundedMap<string, string>(10_000)

/**
 * What PATs and service tokens store beside their owner: never the token,
 * only its SHA-256 as the Store key, so authenticating is one primary-key read.
 */
export type StoredToken = { name: string, hint: string, createdAt: Date, lastUsedAt: Date | null, expiresAt: Date | null, revokedAt: Date | null }

/** A new token and what is stored of it; the token itself is shown to its owner once and never again. */
export function issueToken (prefix: string, input: { name: string, expiresAt?: string }, now: Date): { token: string, stored: StoredToken & { _id: string } } {
  const name = input.name.trim()
  if (name === '') throw commonErrors.invalidName()
  const expiresAt = futureExpiry(input.expiresAt, now)
  const token = createPat(prefix)
  return { token, stored: { _id: hashToken(token), name, hint: patHint(token, prefix), createdAt: now, lastUsedAt: null, expiresAt, revokedAt: null } }
}

/** What listings show of a stored token, beside its handle and owner. */
export function tokenView (record: StoredToken): { name: string, hint: string, createdAt: string, lastUsedAt: string | null, expiresAt: string | null } {
  return {
    name: record.name,
    hint: record.hint,
    createdAt: isoString(record.createdAt),
    lastUsedAt: isoStringOrNull(record.lastUsedAt),
    expiresAt: isoStringOrNull(record.expiresAt)
  }
}

/**
 * The stored record of a token in this format, if it still authenticates
 * (neither revoked nor expired); null otherwise, and a malformed token never
 * reaches the Store. Keeps lastUsedAt roughly current as a side effect.
 */
export async function usableToken<T extends Document & StoredToken> (store: Store, collection: string, token: string, prefix: string, clock: Clock): Promise<WithId<T> | null> {
  if (typeof token !== 'string' || !isWellFormedPat(token, prefix)) return null
  // Read shared: the record is only looked at, and a client sends the same token with every call.
  let hash = hashes.get(token)
  if (hash === undefined) hashes.set(token, hash = hashToken(token))
  const record = await store.extensions.shared<T>(collection).findOne({ _id: hash })
  const nowMs = clock.nowMs()
  if (record === null || record.revokedAt !== null || (record.expiresAt !== null && record.expiresAt.getTime() <= nowMs)) return null
  if (record.lastUsedAt === null || nowMs - record.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    await store.collection<T>(collection).updateOne({ _id: record._id }, { $set: { lastUsedAt: new Date(nowMs) } })
  }
  return record
}

/** An optional expiry a client gave for a new token: null, or a date strictly in the future. */
function futureExpiry (raw: string | undefined, now: Date): Date | null {
  if (raw === undefined) return null
  const expiresAt = new Date(raw)
  if (Number.isNaN(expiresAt.getTime()) || expiresAt <= now) throw identityErrors.invalidExpiry()
  return expiresAt
}
