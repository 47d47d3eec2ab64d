import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { systemClock } from '../services/platform/clock.js'
import { projectErrors } from '../services/projects/errors.js'
import { newId } from '../services/platform/ids.js'
import { ProjectAuth } from '../services/projects/project-auth.js'
import { ProjectTokens } from '../services/projects/project-tokens.js'
import { ProjectUsers } from '../services/projects/project-users.js'
import { ProjectUserAdmin } from '../services/projects/user-admin.js'
import { Cursors } from '../services/collections/query.js'
import { ServiceTokens } from '../services/projects/service-tokens.js'
import { RefreshSessions } from '../services/identity/sessions.js'
import { NO_FIELDS, readDeny } from '../services/collections/access.js'
import { PROJECT_USERS_TABLE } from '../services/projects/naming.js'
import { projectAuthSchemas } from '../schemas/project-auth.js'
import { projectUserAdminSchemas } from '../schemas/project-users.js'
import { projectAuthEmailSchemas } from '../schemas/project-auth-email.js'
import { AddressGuard } from '../services/outbound/internal-addresses.js'
import { EmailSettingsService, sealedSmtpPasswords } from '../services/projects/email-settings.js'
import { EmailFlows, sealedEmailTokens, PROJECT_EMAIL_SEND_JOB, PROJECT_EMAIL_TOKENS_PRUNE_EVERY_MS, PROJECT_EMAIL_TOKENS_PRUNE_JOB } from '../services/projects/email-flows.js'
import { smtpSender } from '../services/projects/email-sender.js'
import { OauthProviders, sealedOauthClientSecrets } from '../services/projects/oauth-providers.js'
import { OauthSignIn } from '../services/projects/oauth-sign-in.js'
import { guardedFetch } from '../services/outbound/guarded-fetch.js'
import { projectOauthSchemas } from '../schemas/project-oauth.js'
import { requiredBearer, wrongToken } from '../http/credentials.js'
import { setCaller } from '../http/caller.js'

export interface ProjectAuthServices {
  auth: ProjectAuth
  users: ProjectUsers
  userAdmin: ProjectUserAdmin
  tokens: ProjectTokens
  sessions: RefreshSessions
  serviceTokens: ServiceTokens
  emailSettings: EmailSettingsService
  emailFlows: EmailFlows
  oauthProviders: OauthProviders
  oauthSignIn: OauthSignIn
}

declare module 'fastify' {
  interface FastifyInstance {
    projectAuth: ProjectAuthServices
    /** onRequest: a project JWT of `params.projectId`, while the project has auth on, of a user still holding that session. */
    requireProjectUser: (request: FastifyRequest) => Promise<void>
    /** onRequest: a service token of `params.projectId`. */
    requireServiceToken: (request: FastifyRequest) => Promise<void>
  }
}

/**
 * Credentials of a project's own world: end-user JWTs, signed with a key
 * derived for that one project (so a token of project A cannot even verify
 * on project B, and never as a platform token), and service tokens for the
 * project's servers. Each decorator accepts only its own kind.
 */
async function projectAuthPlugin (app: FastifyInstance): Promise<void> {
  for (const sealed of [sealedSmtpPasswords, sealedOauthClientSecrets, sealedEmailTokens]) app.resealer.register(sealed)
  const { config, projects, records } = app
  const { definitions } = app.collections
  // A sign-up's record is written by the records service, so it meets the `_users` definition.
  const users = new ProjectUsers(app.store, async (projectId, account, profile) => await records.createUser(projectId, account, profile), new Cursors(app.deriveSecretKey('project-users:cursor')))
  const tokens = new ProjectTokens({
    keyFor: (projectId) => app.deriveSecretKey(`jwt:project:${projectId}`),
    clock: systemClock,
    issuer: config.tokenIssuer,
    ttlSeconds: config.identity.projectTokenTtlSeconds
  })
  const serviceTokens = new ServiceTokens(app.store, { clock: systemClock, newId, prefix: config.identity.serviceTokenPrefix })
  await serviceTokens.init()
  // An end user's session lives as long as its refresh tokens, each refresh asking auth for a fresh project JWT.
  const sessions: RefreshSessions = new RefreshSessions(app.store, 'project_refresh_tokens', {
    clock: systemClock,
    newId,
    issueAccess: async (userId, _familyId, projectId, sessionEpoch) => await auth.issueAccess(userId, projectId ?? '', sessionEpoch),
    refreshTtlSeconds: config.identity.refreshTokenTtlSeconds,
    reuseGraceSeconds: config.identity.refreshReuseGraceSeconds
  })
  await sessions.init()
  const guard = new AddressGuard({ allowedHosts: config.projectEmail.allowedHosts })
  const emailSettings = new EmailSettingsService(app.store, { clock: systemClock, secrets: app.secrets, guard })
  const auth: ProjectAuth = new ProjectAuth({
    users,
    tokens,
    sessions,
    clock: systemClock,
    findProject: (projectId) => projects.findById(projectId),
    hiddenFromUsers: async (projectId) => {
      const definition = await definitions.find(projectId, PROJECT_USERS_TABLE)
      return definition === null ? NO_FIELDS : readDeny(definition.methods)
    },
    sweepDeleted: async (projectId) => { await projects.purge(projectId) },
    requiresVerifiedEmail: async (projectId) => await emailSettings.requiresVerifiedEmail(projectId)
  })
  const emailFlows = new EmailFlows(app.store, {
    clock: systemClock,
    users,
    auth,
    settings: emailSettings,
    send: smtpSender(guard, config.projectEmail.timeoutMs),
    enqueueSend: async (payload) => { await app.jobs.enqueue(PROJECT_EMAIL_SEND_JOB, payload) },
    secrets: app.secrets,
    projectName: async (projectId) => (await projects.findById(projectId))?.name ?? projectId,
    linkTtlSeconds: config.projectEmail.linkTtlSeconds,
    onDeliveryFailure: (error, context) => { app.log.warn({ err: error, ...context }, 'an end user\'s email could not be sent') }
  })
  await emailFlows.init()
  app.registerJobHandler(PROJECT_EMAIL_SEND_JOB, async (payload, { job }) => await emailFlows.deliver(payload, { last: job.attempts >= job.maxAttempts }))
  app.registerJobHandler(PROJECT_EMAIL_TOKENS_PRUNE_JOB, async () => await emailFlows.pruneExpired())
  app.addHook('onReady', async () => { await app.jobs.schedule(PROJECT_EMAIL_TOKENS_PRUNE_JOB, PROJECT_EMAIL_TOKENS_PRUNE_EVERY_MS) })
  const oauthGuard = new AddressGuard({ allowedHosts: config.projectOauth.allowedHosts })
  const callbackUrl = (projectId: string, provider: string): string => `${config.publicUrl}/api/p/${projectId}/auth/oauth/${provider}/callback`
  const oauthProviders = new OauthProviders(app.store, { clock: systemClock, secrets: app.secrets, guard: oauthGuard, callbackUrl })
  await oauthProviders.init()
  const oauthSignIn = new OauthSignIn(app.store, {
    clock: systemClock,
    providers: oauthProviders,
    users,
    auth,
    // Discovery, token, userinfo and key fetches alike: through the guard, pinned, no redirect.
    fetch: guardedFetch(oauthGuard, { headersTimeoutMs: 10_000, idleTimeoutMs: 10_000, maxResponseBytes: 1024 * 1024 }),
    callbackUrl,
    allowedOrigins: async (projectId) => (await projects.findById(projectId))?.allowedOrigins ?? []
  })
  await oauthSignIn.init()
  const userAdmin = new ProjectUserAdmin({
    users,
    auth,
    providersOf: async (projectId, userIds) => await oauthSignIn.providersOf(projectId, userIds),
    deleteRecord: async (projectId, userId, adminId) => await records.deleteUser(projectId, userId, adminId),
    setDisabledRecord: async (projectId, userId, disabled, adminId) => await records.setUserDisabled(projectId, userId, disabled, adminId)
  })
  oauthProviders.onChange((projectId, provider) => { oauthSignIn.forgetProvider(projectId, provider) })
  for (const schema of projectOauthSchemas) app.addSchema(schema)
  for (const schema of projectAuthEmailSchemas) app.addSchema(schema)
  for (const schema of projectAuthSchemas) app.addSchema(schema)
  for (const schema of projectUserAdminSchemas) app.addSchema(schema)

  projects.onAuthEnabled(async (projectId) => { await users.enable(projectId) })
  projects.onDelete(async (projectId) => {
    await serviceTokens.deleteAllForProject(projectId)
    await sessions.forgetScope(projectId)
    await emailSettings.remove(projectId)
    await emailFlows.forgetProject(projectId)
    await oauthProviders.forgetProject(projectId)
    await oauthSignIn.forgetProject(projectId)
  })
  // A user deleted or disabled through the data API loses every session at once; a deleted one, its provider identities too.
  records.onRemove(async (projectId, collection, docs) => {
    if (collection.name !== PROJECT_USERS_TABLE) return
    const ids = docs.map((doc) => doc._id)
    await auth.endSessions(projectId, ids)
    await oauthSignIn.forgetUsers(projectId, ids)
  })
  records.onUpdate(async (projectId, collection, ids, changes) => {
    if (collection.name === PROJECT_USERS_TABLE) await auth.usersUpdated(projectId, ids, changes)
  })

  app.decorate('projectAuth', { auth, users, userAdmin, tokens, sessions, serviceTokens, emailSettings, emailFlows, oauthProviders, oauthSignIn })

  const prefixes = { pat: config.identity.patPrefix, serviceToken: config.identity.serviceTokenPrefix }
  app.decorate('requireProjectUser', async (request: FastifyRequest) => {
    const { projectId } = request.params as { projectId: string }
    const token = requiredBearer(request, 'project JWT')
    const wrong = wrongToken(token, prefixes, 'projectUser', projectId)
    if (wrong !== null) {
      // The project's own refusals (404, auth off) come first, as they do for any token.
      await auth.requireAuthOn(projectId)
      throw wrong
    }
    setCaller(request, 'endUser', await auth.endUser(projectId, token))
  })

  app.decorate('requireServiceToken', async (request: FastifyRequest) => {
    const { projectId } = request.params as { projectId: string }
    const found = await serviceTokens.authenticate(requiredBearer(request, 'service token'))
    if (found === null || found.projectId !== projectId) throw projectErrors.invalidServiceToken()
  })
}

export default fp(projectAuthPlugin, {
  name: 'plinth-project-auth',
  fastify: '5.x',
  dependencies: ['plinth-config', 'plinth-store', 'plinth-jobs', 'plinth-secrets', 'plinth-reseal', 'plinth-projects', 'plinth-collections', 'plinth-records']
})
