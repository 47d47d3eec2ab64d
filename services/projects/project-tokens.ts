import { createSigner, createVerifier } from 'fast-jwt'
import type { Clock } from '../platform/clock.js'
import { BoundedMap } from '../cache/bounded-map.js'
import { isoString } from '../platform/iso-dates.js'

/** The claims of a project JWT, as signed and as accepted. */
export interface ProjectClaims {
  sub: string
  pid: string
  type: 'project'
  /** The user's session epoch when it was issued: moving the epoch ends every token issued before. Absent means 0. */
  sv?: number
  aud: string
  iss: string
  iat: number
  exp: number
}

export interface SignedProjectToken {
  token: string
  /** ISO 8601 */
  expiresAt: string
  /** Seconds */
  expiresIn: number
}

interface Codec {
  sign: (claims: ProjectClaims) => string
  verify: (token: string) => unknown
}

const VERIFIED_TOKENS_KEPT = 10_000
// No longer bearer token is accepted, and verify's body takes any string, so this is where a token that size is refused.
const MAX_TOKEN_LENGTH = 8192
const MIN_KEY_BYTES = 32
const REQUIRED_CLAIMS = ['sub', 'pid', 'type', 'aud', 'iss', 'iat', 'exp']

export function projectAudience (projectId: string): string {
  return `plinth:project:${projectId}`
}

/**
 * End-user JWTs of one project. Each project signs with its own
 * key, so a token of project A fails the signature check on project B before
 * any claim is read; the audience, `pid` and `type` claims are checked as well
 * so that a shared or misconfigured key still cannot let one through.
 */
/** Whom a verified project JWT speaks for. */
export interface TokenHolder { userId: string, sessionEpoch: number }

interface Verified extends TokenHolder { projectId: string, expiresAtMs: number }

export class ProjectTokens {
  // The signature check is the costliest step of an end-user request; a hit needs the very same token, until it expires.
  private readonly verified = new BoundedMap<string, Verified>(VERIFIED_TOKENS_KEPT)

  constructor (private readonly deps: { keyFor: (projectId: string) => Buffer, clock: Clock, issuer: string, ttlSeconds: number }) {
    if (!Number.isInteger(deps.ttlSeconds) || deps.ttlSeconds <= 0) throw new RangeError('ttlSeconds must be a positive integer')
    if (deps.issuer === '') throw new RangeError('issuer must not be empty')
  }

  sign (projectId: string, userId: string, sessionEpoch = 0): SignedProjectToken {
    // iat and exp come from the injected clock, not fast-jwt's Date.now(), so tests can move time.
    const iat = Math.floor(this.deps.clock.nowMs() / 1000)
    const exp = iat + this.deps.ttlSeconds
    const token = this.codec(projectId).sign({
      sub: userId, pid: projectId, type: 'project', ...(sessionEpoch === 0 ? {} : { sv: sessionEpoch }), aud: projectAudience(projectId), iss: this.deps.issuer, iat, exp
    })
    return { token, expiresAt: isoString(new Date(exp * 1000)), expiresIn: this.deps.ttlSeconds }
  }

  /** Null for anything but a live, untampered project JWT of exactly this project. Shared: read it, never change it. */
  verify (projectId: string, token: string): TokenHolder | null {
    if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_LENGTH) return null
    // Keyed by the token alone: its claims name its one project, checked below on every hit.
    let known = this.verified.get(token)
    if (known === undefined || known.expiresAtMs <= this.deps.clock.nowMs()) {
      let payload: unknown
      try {
        payload = this.codec(projectId).verify(token)
      } catch {
        return null
      }
      const claims = this.checkClaims(payload, projectId)
      if (claims === null) return null
      known = { projectId: claims.pid, userId: claims.sub, sessionEpoch: claims.sv ?? 0, expiresAtMs: claims.exp * 1000 }
      this.verified.set(token, known)
    }
    return known.projectId === projectId ? known : null
  }

  private checkClaims (payload: unknown, projectId: string): ProjectClaims | null {
    if (payload === null || typeof payload !== 'object') return null
    const claims = payload as Record<string, unknown>
    const nowSeconds = this.deps.clock.nowMs() / 1000
    if (claims.type !== 'project' || claims.pid !== projectId) return null
    if (typeof claims.sub !== 'string' || claims.sub === '') return null
    if (typeof claims.exp !== 'number' || claims.exp <= nowSeconds) return null
    if (typeof claims.iat !== 'number') return null
    if (claims.nbf !== undefined && (typeof claims.nbf !== 'number' || claims.nbf > nowSeconds)) return null
    return claims as unknown as ProjectClaims
  }

  private codec (projectId: string): Codec {
    const key = this.deps.keyFor(projectId)
    if (key.length < MIN_KEY_BYTES) throw new RangeError(`the signing key of a project must be at least ${MIN_KEY_BYTES} bytes`)
    return {
      sign: createSigner<ProjectClaims>({ key, algorithm: 'HS256' }),
      // fast-jwt fixes clockTimestamp when the verifier is built; exp and nbf are checked against the Clock in checkClaims instead.
      verify: createVerifier({
        key,
        algorithms: ['HS256'],
        allowedAud: projectAudience(projectId),
        allowedIss: this.deps.issuer,
        requiredClaims: REQUIRED_CLAIMS,
        ignoreExpiration: true,
        ignoreNotBefore: true
      })
    }
  }
}
