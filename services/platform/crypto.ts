import { createCipheriv, createDecipheriv, createHmac, hash, hkdfSync, randomBytes } from 'node:crypto'
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import * as argon2 from 'argon2'
import { ConfigError } from './config-env.js'
import { commonErrors, type AppError } from './errors.js'

/**
 * OWASP Password Storage Cheat Sheet minimum for argon2id: 19 MiB, 2 passes,
 * 1 lane. Memory is the cost that hurts GPU attackers; staying at the minimum
 * keeps a login at a few tens of ms so a burst of logins cannot starve a small
 * node. Raising these later is safe: `passwordNeedsRehash` flags old hashes.
 */
const PASSWORD_HASH_PARAMS = {
  type: argon2.argon2id,
  memoryCost: 19456,
  timeCost: 2,
  parallelism: 1
} as const

export async function hashPassword (plain: string): Promise<string> {
  return await argon2.hash(plain, PASSWORD_HASH_PARAMS)
}

/** False for a wrong password and for anything that is not a valid hash. */
export async function verifyPassword (hash: string, plain: string): Promise<boolean> {
  if (typeof hash !== 'string' || !hash.startsWith('$argon2')) return false
  try {
    return await argon2.verify(hash, plain)
  } catch {
    return false
  }
}

/** True when a stored hash was made with weaker parameters than today's; rehash it on the next successful login. */
export function passwordNeedsRehash (hash: string): boolean {
  try {
    return !hash.startsWith('$argon2id$') || argon2.needsRehash(hash, PASSWORD_HASH_PARAMS)
  } catch {
    return true
  }
}

const TOKEN_PREFIX = /^[A-Za-z0-9][A-Za-z0-9_-]*$/
const MIN_TOKEN_BYTES = 16

/** A URL-safe random secret, `<prefix>_<base64url>` when a prefix is given. */
export function generateToken (prefix?: string, bytes = 32): string {
  if (!Number.isInteger(bytes) || bytes < MIN_TOKEN_BYTES) throw new RangeError(`a token needs at least ${MIN_TOKEN_BYTES} random bytes`)
  if (prefix !== undefined && !TOKEN_PREFIX.test(prefix)) throw new RangeError(`token prefix must match ${TOKEN_PREFIX.source}`)
  const secret = randomBytes(bytes).toString('base64url')
  return prefix === undefined ? secret : `${prefix}_${secret}`
}

/**
 * SHA-256 hex of a token. Tokens carry at least 128 random bits, so unlike
 * passwords they cannot be guessed from a fast hash; a fast hash also lets
 * every request look a token up by its hash without a slow KDF per request.
 */
export function hashToken (token: string): string {
  return hash('sha256', token, 'hex')
}

const MASTER_KEY_BYTES = 32

/**
 * A purpose-bound key derived from the master key (HKDF-SHA256), so one
 * master key can serve several uses without any two sharing a key.
 */
export function deriveKey (masterKey: Buffer, purpose: string, bytes = 32): Buffer {
  if (masterKey.length !== MASTER_KEY_BYTES) throw new RangeError(`master key must be ${MASTER_KEY_BYTES} bytes`)
  return Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), `plinth:${purpose}`, bytes))
}

const SEALED_VERSION = 'v1'
const IV_BYTES = 12
const TAG_BYTES = 16
const BASE64URL = /^[A-Za-z0-9_-]*$/

const malformedSecret = (): AppError => commonErrors.sealedSecretMalformed()
const rejectedSecret = (): AppError => commonErrors.sealedSecretRejected()

/** A master key's id: a short fingerprint derived from it (not the key), stored beside what is sealed under it. */
export function masterKeyId (masterKey: Buffer): string {
  return deriveKey(masterKey, 'key-id', 6).toString('hex')
}

interface SealingKey { id: string, key: Buffer, ivKey: Buffer }

function sealingKey (masterKey: Buffer): SealingKey {
  return { id: masterKeyId(masterKey), key: deriveKey(masterKey, `secret-box:${SEALED_VERSION}`), ivKey: deriveKey(masterKey, `secret-box:${SEALED_VERSION}:synthetic-iv`) }
}

/**
 * Seals provider secrets with AES-256-GCM as `v1.<iv>.<tag>.<ciphertext>`
 * (base64url parts). The associated data binds a secret to where it is stored
 * (e.g. `project:<id>:oauth:github`) so a sealed value copied to another
 * record fails to open.
 *
 * New values are sealed under the current master key (`keyId`); values sealed
 * under a retired one (PLINTH_MASTER_KEY_RETIRED) still open, and the
 * re-seal job (reseal.ts) seals them again under the current key.
 */
export class SecretBox {
  readonly #current: SealingKey
  readonly #keys: SealingKey[]

  constructor (masterKey: Buffer, retiredKeys: readonly Buffer[] = []) {
    this.#current = sealingKey(masterKey)
    const retired = retiredKeys.map(sealingKey).filter((key) => key.id !== this.#current.id)
    this.#keys = [this.#current, ...retired]
  }

  /** The id of the master key new values are sealed under; store it beside a sealed value to find those left under a retired key. */
  get keyId (): string {
    return this.#current.id
  }

  seal (plaintext: string, associatedData?: string): string {
    // A fresh random IV per message: GCM breaks completely if a key ever reuses one.
    return this.sealWith(randomBytes(IV_BYTES), plaintext, associatedData)
  }

  /**
   * Sealed with an IV derived from the message itself (an HMAC of the
   * associated data and the plaintext, as SIV modes do), so the same message
   * always seals to the same text — for values handed out again and again,
   * such as cursors — while two different messages never share an IV.
   * Equal messages are visibly equal; nothing else about them is.
   */
  sealDeterministic (plaintext: string, associatedData = ''): string {
    const iv = createHmac('sha256', this.#current.ivKey).update(`${associatedData.length}:${associatedData}`).update(plaintext).digest().subarray(0, IV_BYTES)
    return this.sealWith(iv, plaintext, associatedData)
  }

  private sealWith (iv: Buffer, plaintext: string, associatedData?: string): string {
    const cipher = createCipheriv('aes-256-gcm', this.#current.key, iv, { authTagLength: TAG_BYTES })
    if (associatedData !== undefined) cipher.setAAD(Buffer.from(associatedData, 'utf8'))
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
    const tag = cipher.getAuthTag()
    return [SEALED_VERSION, iv.toString('base64url'), tag.toString('base64url'), ciphertext.toString('base64url')].join('.')
  }

  /** Opens a value sealed under the current key or a retired one; the tag tells which, so trying each is safe. */
  open (sealed: string, associatedData?: string): string {
    return this.opened(sealed, associatedData).plaintext
  }

  /** The value sealed again under the current key when a retired key sealed it; null when the current key did already. */
  reseal (sealed: string, associatedData?: string): string | null {
    const { plaintext, keyId } = this.opened(sealed, associatedData)
    return keyId === this.#current.id ? null : this.seal(plaintext, associatedData)
  }

  private opened (sealed: string, associatedData?: string): { plaintext: string, keyId: string } {
    const parts = typeof sealed === 'string' ? sealed.split('.') : []
    if (parts.length !== 4 || parts[0] !== SEALED_VERSION || !parts.slice(1).every((part) => BASE64URL.test(part))) throw malformedSecret()
    const iv = Buffer.from(parts[1], 'base64url')
    const tag = Buffer.from(parts[2], 'base64url')
    const ciphertext = Buffer.from(parts[3], 'base64url')
    // GCM accepts short tags, which would make forgery cheap: insist on the full 16 bytes.
    if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw malformedSecret()
    for (const { id, key } of this.#keys) {
      const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES })
      if (associatedData !== undefined) decipher.setAAD(Buffer.from(associatedData, 'utf8'))
      decipher.setAuthTag(tag)
      try {
        return { plaintext: Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8'), keyId: id }
      } catch {}
    }
    throw rejectedSecret()
  }
}

export function createSecretBox (masterKey: Buffer, retiredKeys: readonly Buffer[] = []): SecretBox {
  return new SecretBox(masterKey, retiredKeys)
}

const HEX_KEY = /^[0-9a-fA-F]{64}$/
const BASE64_KEY = /^[A-Za-z0-9+/_-]{43}=?$/

/** 32 bytes from 64 hex chars or base64 (standard or URL-safe); null for anything else. */
export function parseKeyText (text: string): Buffer | null {
  const value = text.trim()
  if (HEX_KEY.test(value)) return Buffer.from(value, 'hex')
  if (BASE64_KEY.test(value)) {
    const key = Buffer.from(value, 'base64')
    if (key.length === MASTER_KEY_BYTES) return key
  }
  return null
}

export const MASTER_KEY_FILE = 'master.key'

/**
 * The master key: PLINTH_MASTER_KEY when set (needed when several nodes share
 * sealed secrets), else `<dataDir>/master.key`, created on first start. The
 * file holds base64 text so the same value can later move into the variable.
 */
export function loadMasterKey (options: { env: string | null | undefined, dataDir: string }): Buffer {
  const fromEnv = options.env?.trim()
  if (fromEnv !== undefined && fromEnv !== '') {
    const key = parseKeyText(fromEnv)
    if (key === null) throw new ConfigError('PLINTH_MASTER_KEY', 'must be 32 bytes written as base64 (44 chars) or hex (64 chars); generate one with `openssl rand -base64 32`')
    return key
  }
  mkdirSync(options.dataDir, { recursive: true })
  const file = join(options.dataDir, MASTER_KEY_FILE)
  let text = readKeyFile(file)
  if (text === null) {
    createKeyFile(file)
    text = readFileSync(file, 'utf8')
  }
  const key = parseKeyText(text)
  if (key === null) {
    throw new Error(`Master key file ${file} does not hold a 32-byte key (base64 or hex). Restore the original file: secrets sealed under it cannot be opened with another key.`)
  }
  return key
}

function readKeyFile (file: string): string | null {
  try {
    return readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
}

/**
 * Writes the complete key to a private temporary file, then links it into
 * place. link() fails if the name exists, so when two processes start together
 * exactly one key wins and neither can read a half-written file.
 */
function createKeyFile (file: string): void {
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`
  const fd = openSync(temporary, 'wx', 0o600)
  try {
    writeSync(fd, `${randomBytes(MASTER_KEY_BYTES).toString('base64')}\n`)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  try {
    linkSync(temporary, file)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  } finally {
    unlinkSync(temporary)
  }
}
