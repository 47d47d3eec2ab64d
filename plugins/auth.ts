import fp from 'fastify-plugin'
import jwt from '@fastify/jwt'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { commonErrors } from '../services/platform/errors.js'
import { identityErrors } from '../services/identity/errors.js'
import { systemClock } from '../services/platform/clock.js'
import { newId } from '../services/platform/ids.js'
import { buildIdentityServices, type Identity } from '../services/identity/index.js'
import { RATE_LIMITS_PRUNE_EVERY_MS, RATE_LIMITS_PRUNE_JOB } from '../services/platform/rate-limit.js'
import { BoundedMap } from '../services/cache/bounded-map.js'
import { authSchemas } from '../schemas/auth.js'
import { requiredBearer, wrongToken } from '../http/credentials.js'
import { setCaller, type PlatformAuth } from '../http/caller.js'

export type { Identity }

declare module 'fastify' {
  interface FastifyInstance {
    identity: Identity
    /** A platform JWT or PAT given as a string (for routes that accept several credential kinds); 401 otherwise. */
    verifyPlatformToken: (token: string) => Promise<PlatformAuth>
    /** onRequest: a platform JWT or a PAT. */
    requirePlatformUser: (request: FastifyRequest) => Promise<void>
    /** onRequest: a platform JWT only (managing PATs and SSH keys is not something a PAT may do). */
    requirePlatformSession: (request: FastifyRequest) => Promise<void>
    /** onRequest: a platform JWT or an unscoped PAT of a user PLATFORM_ADMINS lists now (403 otherwise). */
    requirePlatformAdmin: (request: FastifyRequest) => Promise<void>
  }
}

interface PlatformClaims { sub: string, sid: string, type: string, sv?: number, exp?: number }

const PLATFORM_AUDIENCE = 'plinth:platform'
const VERIFIED_TOKENS_KEPT = 10_000

/**
 * Platform credentials. Each kind is recognised by its form: a PAT by its
 * prefix and checksum, anything else must be a platform JWT signed with the
 * platform key and carrying `type: "platform"` — a project JWT is signed with
 * another key and so never verifies here.
 */
async function authPlugin (app: FastifyInstance): Promise<void> {
  const { tokenIssuer, publicUrl } = app.config
  const config = app.config.identity
  await app.register(jwt, {
    secret: app.deriveSecretKey('jwt:platform'),
    sign: { algorithm: 'HS256', expiresIn: config.accessTokenTtlSeconds, aud: PLATFORM_AUDIENCE, iss: tokenIssuer },
    verify: { algorithms: ['HS256'], allowedAud: PLATFORM_AUDIENCE, allowedIss: tokenIssuer }
  })
  for (const schema of authSchemas) app.addSchema(schema)
  const identity = await buildIdentityServices({
    store: app.store, clock: systemClock, storeClock: app.storeClock, newId, config, publicUrl, signAccessToken: (claims) => app.jwt.sign(claims)
  })
  const { users, apiKeys, rateLimiter } = identity
  app.decorate('identity', identity)
  app.registerJobHandler(RATE_LIMITS_PRUNE_JOB, async () => await rateLimiter.prune())
  app.addHook('onReady', async () => { await app.jobs.schedule(RATE_LIMITS_PRUNE_JOB, RATE_LIMITS_PRUNE_EVERY_MS) })

  // The signature check is the costliest step of an authenticated request; a hit needs the very same token, until it expires.
  const verifiedJwts = new BoundedMap<string, PlatformClaims>(VERIFIED_TOKENS_KEPT)
  const prefixes = { pat: config.patPrefix, serviceToken: config.serviceTokenPrefix }
  const verifyJwt = (token: string): PlatformClaims => {
    const known = verifiedJwts.get(token)
    if (known !== undefined && (known.exp ?? 0) * 1000 > systemClock.nowMs()) return known
    let claims: PlatformClaims
    try {
      claims = app.jwt.verify<PlatformClaims>(token)
    } catch {
      // A project JWT is signed with its project's key, so it fails here: say what it is rather than "invalid".
      throw wrongToken(token, prefixes, 'platform') ?? commonErrors.invalidToken({ why: 'Token is invalid or expired' })
    }
    if (claims.type !== 'platform' || typeof claims.sub !== 'string') throw commonErrors.invalidToken({ why: 'Token is not a platform token' })
    verifiedJwts.set(token, claims)
    return claims
  }

  const authenticate = async (request: FastifyRequest): Promise<PlatformAuth> => await authenticateToken(requiredBearer(request, 'platform JWT or personal access token'))
  // A valid signature is not enough: the user must still exist, and a JWT must carry its user's current session epoch.
  const authenticateToken = async (token: string): Promise<PlatformAuth> => {
    if (token.startsWith(`${config.patPrefix}_`)) {
      const pat = await apiKeys.authenticate(token)
      if (pat === null || await users.account(pat.userId) === null) throw commonErrors.invalidToken({ why: 'Personal access token is invalid, expired or revoked' })
      return { userId: pat.userId, via: 'pat', keyId: pat.keyId, scopes: pat.scopes }
    }
    const claims = verifyJwt(token)
    const account = await users.account(claims.sub)
    if (account === null || account.sessionEpoch !== (claims.sv ?? 0)) throw commonErrors.invalidToken({ why: 'The session of this token has ended; sign in again' })
    return { userId: claims.sub, via: 'jwt' }
  }

  app.decorate('verifyPlatformToken', authenticateToken)
  app.decorate('requirePlatformUser', async (request: FastifyRequest) => {
    setCaller(request, 'user', await authenticate(request))
  })
  app.decorate('requirePlatformSession', async (request: FastifyRequest) => {
    const auth = await authenticate(request)
    if (auth.via !== 'jwt') throw identityErrors.patNotAllowed()
    setCaller(request, 'user', auth)
  })
  // Asked on every request, of the configuration this process runs with: never a claim a token carries nor a value a
  // client wrote, so a user taken off the list (or deleted: authenticate refuses them) loses access at once.
  app.decorate('requirePlatformAdmin', async (request: FastifyRequest) => {
    const auth = await authenticate(request)
    if (!config.platformAdmins.includes(auth.userId)) throw identityErrors.platformAdminRequired({ why: 'this user is not listed in PLATFORM_ADMINS' })
    // A PAT narrowed by scopes holds only catalogue permissions, none of which is the operator's.
    if (auth.scopes !== undefined && auth.scopes.length > 0) throw identityErrors.platformAdminRequired({ why: 'a personal access token with scopes never acts as one; use a session or an unscoped token' })
    setCaller(request, 'user', auth)
  })
}

export default fp(authPlugin, { name: 'plinth-auth', fastify: '5.x', dependencies: ['plinth-config', 'plinth-store', 'plinth-secrets', 'plinth-jobs'] })
