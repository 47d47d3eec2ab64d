import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProjectAuthParams, ProjectAuthResponses } from '../../schemas/project-auth.js'
import {
  EmailAddressBody, EmailFlowResponses, EmailTokenBody, NewEmailBody, PasswordResetConfirmBody, type EmailFlow
} from '../../schemas/project-auth-email.js'
import { commonErrors } from '../../services/platform/errors.js'
import { identityErrors } from '../../services/identity/errors.js'
import { normalizeEmail } from '../../services/identity/users.js'
import { projectErrors } from '../../services/projects/errors.js'
import { ok } from '../replies.js'

const tags = ['project auth']
const PROJECT = [commonErrors.rateLimited, commonErrors.projectNotFound, projectErrors.authDisabled]
const REQUEST = [...PROJECT, projectErrors.emailNotConfigured]
const CONFIRM = [...PROJECT, projectErrors.emailLinkInvalid]
const SAME_ANSWER = 'Answers the same whether or not the address has an account, and the mail goes out after the answer. ' +
  'Rate-limited per project and address (whether or not it has an account) and per client address.'

/** `/api/p/:projectId/auth/…`: the flows that mail an end user a link (docs/projects.md, "End-user email flows"). */
const emailFlowRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { emailFlows } = app.projectAuth
  const { rateLimiter } = app.identity
  const perClient = app.config.identity.authRateLimit
  const perAddress = { max: app.config.projectEmail.perAddressLimit, windowSeconds: 3600 }
  const countRequest = async (projectId: string, ip: string, flow: EmailFlow, email: string): Promise<void> => {
    await rateLimiter.hit('project-email', `${projectId}:${ip}`, perClient)
    await rateLimiter.hit(`project-email-${flow}`, `${projectId}:${normalizeEmail(email)}`, perAddress)
  }
  const countConfirm = async (projectId: string, ip: string): Promise<void> => {
    await rateLimiter.hit('project-email-confirm', `${projectId}:${ip}`, perClient)
  }

  app.post('/verification/request', {
    config: { errors: REQUEST },
    schema: {
      operationId: 'requestProjectEmailVerification',
      tags,
      summary: 'Mail an end user a link that verifies their address',
      description: `Nothing is sent for an unknown, disabled or already verified address. ${SAME_ANSWER}`,
      params: ProjectAuthParams,
      body: EmailAddressBody,
      response: EmailFlowResponses.requested
    }
  }, async (request, reply) => {
    await countRequest(request.params.projectId, request.ip, 'verification', request.body.email)
    await emailFlows.requestVerification(request.params.projectId, request.body.email)
    void reply.code(202)
    return ok({ requested: true as const })
  })

  app.post('/verification/confirm', {
    config: { errors: CONFIRM },
    schema: {
      operationId: 'confirmProjectEmailVerification',
      tags,
      summary: 'Verify an end user\'s address with the token of the mailed link',
      description: 'The token works once, until it expires, and only while the account still has the address it was mailed to.',
      params: ProjectAuthParams,
      body: EmailTokenBody,
      response: EmailFlowResponses.verified
    }
  }, async (request) => {
    await countConfirm(request.params.projectId, request.ip)
    await emailFlows.confirmVerification(request.params.projectId, request.body.token)
    return ok({ verified: true as const })
  })

  app.post('/password-reset/request', {
    config: { errors: REQUEST },
    schema: {
      operationId: 'requestProjectPasswordReset',
      tags,
      summary: 'Mail an end user a link to choose a new password',
      description: `Nothing is sent for an unknown or disabled address. ${SAME_ANSWER}`,
      params: ProjectAuthParams,
      body: EmailAddressBody,
      response: EmailFlowResponses.requested
    }
  }, async (request, reply) => {
    await countRequest(request.params.projectId, request.ip, 'passwordReset', request.body.email)
    await emailFlows.requestPasswordReset(request.params.projectId, request.body.email)
    void reply.code(202)
    return ok({ requested: true as const })
  })

  app.post('/password-reset/confirm', {
    config: { errors: [...CONFIRM, identityErrors.weakPassword] },
    schema: {
      operationId: 'confirmProjectPasswordReset',
      tags,
      summary: 'Set a new password with the token of the mailed link; every session of the user ends',
      description: 'The token works once and until it expires. The address counts as verified, and every session the user held ends.',
      params: ProjectAuthParams,
      body: PasswordResetConfirmBody,
      response: EmailFlowResponses.passwordReset
    }
  }, async (request) => {
    await countConfirm(request.params.projectId, request.ip)
    await emailFlows.confirmPasswordReset(request.params.projectId, request.body.token, request.body.newPassword)
    return ok({ passwordReset: true as const })
  })

  app.post('/email-change/request', {
    config: { auth: 'projectUser', errors: [commonErrors.rateLimited, projectErrors.emailNotConfigured, identityErrors.invalidEmail] },
    schema: {
      operationId: 'requestProjectEmailChange',
      tags,
      summary: 'Mail the new address a link that makes it the signed-in end user\'s',
      description: 'With the end user\'s project JWT. Nothing is sent when the new address has an account already, ' +
        'and the answer is the same. Rate-limited per user and per new address.',
      params: ProjectAuthParams,
      body: NewEmailBody,
      response: EmailFlowResponses.requested
    }
  }, async (request, reply) => {
    const { projectId } = request.params
    const { id } = request.caller.endUser
    await rateLimiter.hit('project-email-change-user', `${projectId}:${id}`, perAddress)
    await rateLimiter.hit('project-email-emailChange', `${projectId}:${normalizeEmail(request.body.newEmail)}`, perAddress)
    await emailFlows.requestEmailChange(projectId, id, request.body.newEmail)
    void reply.code(202)
    return ok({ requested: true as const })
  })

  app.post('/email-change/confirm', {
    config: { errors: [...CONFIRM, identityErrors.emailTaken] },
    schema: {
      operationId: 'confirmProjectEmailChange',
      tags,
      summary: 'Make the new address the end user\'s with the token of the link mailed to it; every session of the user ends',
      description: 'The token works once, until it expires, and while the account still has the address it had ' +
        'when the change was asked for. ' +
        'The new address counts as verified; every session the user held ends, so they sign in again with it.',
      params: ProjectAuthParams,
      body: EmailTokenBody,
      response: EmailFlowResponses.emailChanged
    }
  }, async (request) => {
    await countConfirm(request.params.projectId, request.ip)
    return ok({ email: await emailFlows.confirmEmailChange(request.params.projectId, request.body.token) })
  })

  app.post('/magic-link/request', {
    config: { errors: REQUEST },
    schema: {
      operationId: 'requestProjectMagicLink',
      tags,
      summary: 'Mail an end user a link that signs them in',
      description: `Nothing is sent for an unknown or disabled address. ${SAME_ANSWER}`,
      params: ProjectAuthParams,
      body: EmailAddressBody,
      response: EmailFlowResponses.requested
    }
  }, async (request, reply) => {
    await countRequest(request.params.projectId, request.ip, 'magicLink', request.body.email)
    await emailFlows.requestMagicLink(request.params.projectId, request.body.email)
    void reply.code(202)
    return ok({ requested: true as const })
  })

  app.post('/magic-link/confirm', {
    config: { errors: [...CONFIRM, projectErrors.userDisabled] },
    schema: {
      operationId: 'confirmProjectMagicLink',
      tags,
      summary: 'Sign in with the token of the mailed link; returns a project JWT and a refresh token',
      description: 'The token works once and until it expires; the address counts as verified.',
      params: ProjectAuthParams,
      body: EmailTokenBody,
      response: ProjectAuthResponses.session
    }
  }, async (request) => {
    await countConfirm(request.params.projectId, request.ip)
    return ok(await emailFlows.confirmMagicLink(request.params.projectId, request.body.token))
  })
}

export default emailFlowRoutes
