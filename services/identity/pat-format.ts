import { randomBytes } from 'node:crypto'
import { badRequest } from '../errors.js'

/**
 * Personal access tokens look like `<prefix>_<30 random base62><6 checksum>`:
 * the fixed prefix lets secret scanners recognise a leaked token, and the
 * CRC32 checksum lets a typo be refused before any lookup reaches the Store.
 */
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const RANDOM_LENGTH = 30
const CHECKSUM_LENGTH = 6

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = (c & 1) !== 0 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})

/** CRC32 of an ASCII string (token bodies are base62). */
function crc32 (text: string): number {
  let crc = 0xffffffff
  for (let i = 0; i < text.length; i++) crc = CRC_TABLE[(crc ^ text.charCodeAt(i)) & 0xff] ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}

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

/** Whether `token` is shaped like a PAT of this prefix with a valid checksum. */
export function isWellFormedPat (token: string, prefix: string): boolean {
  if (!token.startsWith(`${prefix}_`)) return false
  const rest = token.slice(prefix.length + 1)
  if (rest.length !== RANDOM_LENGTH + CHECKSUM_LENGTH || !/^[0-9A-Za-z]+$/.test(rest)) return false
  const body = rest.slice(0, RANDOM_LENGTH)
  return base62(crc32(body), CHECKSUM_LENGTH) === rest.slice(RANDOM_LENGTH)
}

/** What a listing may show: enough to recognise a token, never enough to use it. */
export function patHint (token: string, prefix: string): string {
  return `${prefix}_…${token.slice(-4)}`
}

// lastUsedAt is written at most this often per token, so a busy token is not a write per request.
const LAST_USED_RESOLUTION_MS = 60_000

export function lastUsedIsStale (lastUsedAt: Date | null, now: Date): boolean {
  return lastUsedAt === null || now.getTime() - lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS
}

/** An optional expiry a client gave for a new token: null, or a date strictly in the future. */
export function futureExpiry (raw: string | undefined, now: Date): Date | null {
  if (raw === undefined) return null
  const expiresAt = new Date(raw)
  if (Number.isNaN(expiresAt.getTime()) || expiresAt <= now) throw badRequest('APP_INVALID_EXPIRY', 'expiresAt must be a date-time in the future')
  return expiresAt
}
