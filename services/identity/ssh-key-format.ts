import { createHash, createPublicKey } from 'node:crypto'
import type { AppError } from '../platform/errors.js'
import { identityErrors } from './errors.js'

export type SshKeyAlgorithm = 'ed25519' | 'ecdsa' | 'rsa'

export interface ParsedSshKey {
  /** The declared key type, e.g. `ssh-ed25519`. */
  type: string
  algorithm: SshKeyAlgorithm
  bits: number
  comment: string | null
  /** Exactly as `ssh-keygen -lf` prints it: `SHA256:` + unpadded base64 of sha256(blob). */
  fingerprint: string
  /** `type base64` without the comment; equal keys give equal strings. */
  canonical: string
}

const MAX_SSH_KEY_LENGTH = 16 * 1024
const MIN_RSA_BITS = 2048
// OpenSSH's own ceiling (SSHBUF_MAX_BIGNUM); bigger moduli are refused by sshd anyway.
const MAX_RSA_BITS = 16384

const ACCEPTED = 'ssh-ed25519, ecdsa-sha2-nistp256, ecdsa-sha2-nistp384, ecdsa-sha2-nistp521 or ssh-rsa'
const CURVES: Record<string, { name: string, jwk: string, bits: number, fieldBytes: number }> = {
  'ecdsa-sha2-nistp256': { name: 'nistp256', jwk: 'P-256', bits: 256, fieldBytes: 32 },
  'ecdsa-sha2-nistp384': { name: 'nistp384', jwk: 'P-384', bits: 384, fieldBytes: 48 },
  'ecdsa-sha2-nistp521': { name: 'nistp521', jwk: 'P-521', bits: 521, fieldBytes: 66 }
}
const NOT_A_KEY = `This does not look like an SSH public key; expected "<type> <base64> [comment]" with type ${ACCEPTED}`
const TYPE_NAME = /^[a-z][a-z0-9.@-]*$/i
const KEY_TYPE_PREFIX = /^(ssh-|ecdsa-|sk-)/
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/

const invalid = (why: string): AppError => identityErrors.invalidSshKey({ why })
// Keep user input out of messages beyond a short, printable excerpt.
const quote = (value: string): string => JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)

/** Validates one OpenSSH public key line (as in `~/.ssh/id_ed25519.pub`) and fingerprints it. */
export function parseSshPublicKey (text: string): ParsedSshKey {
  if (typeof text !== 'string') throw invalid('The SSH public key must be text')
  if (text.length > MAX_SSH_KEY_LENGTH) throw invalid(`The SSH public key is too long (over ${MAX_SSH_KEY_LENGTH} characters); paste a single public key`)
  const line = text.trim()
  if (line === '') throw invalid('The SSH public key is empty; paste the contents of your .pub file')
  refuseOtherFormats(line)
  if (/[\r\n]/.test(line)) throw invalid('Paste exactly one SSH public key, on a single line')
  if (CONTROL.test(line)) throw invalid('The SSH public key contains control characters')

  const fields = /^(\S+)(?:[ \t]+(\S+))?(?:[ \t]+(.*))?$/.exec(line)
  if (fields === null) throw invalid(NOT_A_KEY)
  const [, type, base64 = '', comment = ''] = fields
  if (!KEY_TYPE_PREFIX.test(type) && line.split(/[ \t]+/).some((token) => KEY_TYPE_PREFIX.test(token))) {
    throw invalid('Remove the authorized_keys options before the key type; only the public key itself is accepted')
  }
  const algorithm = checkType(type)
  if (base64 === '') throw invalid(`The ${type} key has no key data after its type`)
  const blob = decodeBase64(base64)

  const reader = new WireReader(blob)
  const inner = reader.string('key type').toString('latin1')
  if (inner !== type) throw invalid(`The key data is for ${quote(inner)} but the line declares ${type}; the key is corrupted or was edited`)
  const bits = algorithm === 'ed25519' ? readEd25519(reader) : algorithm === 'ecdsa' ? readEcdsa(reader, type) : readRsa(reader)
  if (!reader.done()) throw invalid(`The ${type} key data has unexpected bytes after the key; it may be corrupted`)

  return {
    type,
    algorithm,
    bits,
    comment: comment === '' ? null : comment,
    fingerprint: `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`,
    canonical: `${type} ${base64}`
  }
}

function refuseOtherFormats (line: string): void {
  if (/^-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/.test(line) || line.startsWith('PuTTY-User-Key-File-')) {
    throw invalid('This is a private key: keep it secret and paste the public key (the .pub file) instead')
  }
  if (line.startsWith('---- BEGIN SSH2 PUBLIC KEY')) {
    throw invalid('This is an RFC 4716 (PuTTY/SSH2) public key; convert it with `ssh-keygen -i -f key.pub` and paste the result')
  }
  if (line.startsWith('-----BEGIN')) {
    throw invalid('PEM keys are not accepted; convert with `ssh-keygen -i -m PKCS8 -f key.pem` and paste the one-line result')
  }
}

function checkType (type: string): SshKeyAlgorithm {
  if (type === 'ssh-ed25519') return 'ed25519'
  if (type === 'ssh-rsa') return 'rsa'
  if (Object.hasOwn(CURVES, type)) return 'ecdsa'
  if (!TYPE_NAME.test(type)) throw invalid(NOT_A_KEY)
  if (type.endsWith('-cert-v01@openssh.com')) throw invalid(`SSH certificates (${type}) are not accepted; paste the plain public key instead`)
  if (type.startsWith('sk-')) throw invalid(`Security-key (FIDO) SSH keys (${type}) are not supported yet; use ${ACCEPTED}`)
  if (type === 'ssh-dss') throw invalid(`DSA keys (ssh-dss) are insecure and disabled by OpenSSH; use ${ACCEPTED}`)
  throw invalid(`SSH key type ${quote(type)} is not supported; use ${ACCEPTED}`)
}

function decodeBase64 (text: string): Buffer {
  // Node's decoder silently skips junk and truncation; insisting on a round trip makes it strict.
  const blob = BASE64.test(text) && text.length % 4 === 0 ? Buffer.from(text, 'base64') : null
  if (blob === null || blob.toString('base64') !== text) throw invalid('The key data is not valid base64; it may be truncated or have stray characters — copy the whole line again')
  return blob
}

function readEd25519 (reader: WireReader): number {
  const key = reader.string('Ed25519 public key')
  if (key.length !== 32) throw invalid(`Ed25519 public keys are 32 bytes; this one has ${key.length}`)
  return 256
}

function readEcdsa (reader: WireReader, type: string): number {
  const curve = CURVES[type]
  const name = reader.string('curve name').toString('latin1')
  if (name !== curve.name) throw invalid(`The ${type} key names curve ${quote(name)} instead of ${curve.name}; the key is corrupted`)
  const point = reader.string('EC point')
  if (point.length !== 1 + 2 * curve.fieldBytes || point[0] !== 0x04) {
    throw invalid(`The ${type} key must hold an uncompressed ${curve.name} point of ${1 + 2 * curve.fieldBytes} bytes`)
  }
  const x = point.subarray(1, 1 + curve.fieldBytes).toString('base64url')
  const y = point.subarray(1 + curve.fieldBytes).toString('base64url')
  try {
    // OpenSSL refuses coordinates that are out of range or off the curve.
    createPublicKey({ key: { kty: 'EC', crv: curve.jwk, x, y }, format: 'jwk' })
  } catch {
    throw invalid(`The ${type} key's point is not on the ${curve.name} curve; the key is corrupted`)
  }
  return curve.bits
}

function readRsa (reader: WireReader): number {
  const exponent = reader.mpint('RSA exponent')
  const modulus = reader.mpint('RSA modulus')
  const bits = bitLength(modulus)
  if (bits < MIN_RSA_BITS) throw invalid(`RSA keys must be at least ${MIN_RSA_BITS} bits; this one has ${bits}. Generate a new key with \`ssh-keygen -t ed25519\``)
  if (bits > MAX_RSA_BITS) throw invalid(`RSA keys may be at most ${MAX_RSA_BITS} bits; this one has ${bits}`)
  if ((modulus[modulus.length - 1] & 1) === 0) throw invalid('The RSA modulus is even; the key is corrupted')
  const oddAtLeast3 = exponent.length > 0 && (exponent[exponent.length - 1] & 1) === 1 && bitLength(exponent) >= 2
  if (!oddAtLeast3 || exponent.length > modulus.length) throw invalid('The RSA public exponent must be odd, at least 3 and smaller than the modulus')
  return bits
}

/** Bit length of an unsigned big-endian number without leading zero bytes. */
function bitLength (value: Buffer): number {
  return value.length === 0 ? 0 : (value.length - 1) * 8 + (32 - Math.clz32(value[0]))
}

/** Reads the SSH wire encoding of RFC 4251 §5: uint32-length-prefixed strings and mpints. */
class WireReader {
  private offset = 0
  constructor (private readonly data: Buffer) {}

  string (what: string): Buffer {
    if (this.offset + 4 > this.data.length) throw this.truncated(what)
    const length = this.data.readUInt32BE(this.offset)
    if (length > this.data.length - this.offset - 4) throw this.truncated(what)
    this.offset += 4 + length
    return this.data.subarray(this.offset - length, this.offset)
  }

  /** A non-negative mpint with its leading zero bytes stripped. */
  mpint (what: string): Buffer {
    const raw = this.string(what)
    if (raw.length > 0 && (raw[0] & 0x80) !== 0) throw invalid(`The key's ${what} is negative; the key is corrupted`)
    let start = 0
    while (start < raw.length && raw[start] === 0) start++
    return raw.subarray(start)
  }

  done (): boolean {
    return this.offset === this.data.length
  }

  private truncated (what: string): AppError {
    return invalid(`The key data ends before its ${what}; it is truncated or corrupted — copy the whole line again`)
  }
}
