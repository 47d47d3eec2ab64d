import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProjectIdParams } from '../../schemas/projects.js'
import { EmailFlowResponses, EmailSettingsBody } from '../../schemas/project-auth-email.js'
import { commonErrors } from '../../services/platform/errors.js'
import { projectErrors } from '../../services/projects/errors.js'
import { deleted, ok } from '../replies.js'

/**
 * `/api/projects/:projectId/auth/email`: the SMTP server, sender, link base
 * and templates of a project's end-user email flows, and whether sign-in
 * waits for a verified address. The SMTP password is sealed and never returned.
 */
const authEmailRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { emailSettings } = app.projectAuth
  const tags = ['projects']
  app.routeDefaults({ parent: 'project', permission: 'project.auth.manage' })

  app.get('', {
    config: { errors: [projectErrors.emailNotConfigured] },
    schema: {
      operationId: 'getProjectEmailSettings',
      tags,
      summary: 'The project\'s end-user email settings (never the SMTP password)',
      params: ProjectIdParams,
      response: EmailFlowResponses.settings
    }
  }, async (request) => ok(await emailSettings.get(request.scope.project.id)))

  app.put('', {
    config: { errors: [commonErrors.validationFailed, projectErrors.smtpHostRefused] },
    schema: {
      operationId: 'putProjectEmailSettings',
      tags,
      summary: 'Set the SMTP server, sender, link base, templates and verified-only sign-in of the end-user email flows',
      description: 'Replaces the settings. The SMTP host is resolved and refused when it is internal, unless the operator allowed it ' +
        '(`PROJECT_SMTP_ALLOWED_HOSTS`); the check runs again at each send. ' +
        'A password left out keeps the stored one while host and user stay the same.',
      params: ProjectIdParams,
      body: EmailSettingsBody,
      response: EmailFlowResponses.settings
    }
  }, async (request) => ok(await emailSettings.put(request.scope.project.id, request.body)))

  app.delete('', {
    schema: {
      operationId: 'deleteProjectEmailSettings',
      tags,
      summary: 'Remove the email settings: no more mails, and sign-in no longer waits for a verified address',
      params: ProjectIdParams,
      response: EmailFlowResponses.settingsDeleted
    }
  }, async (request) => {
    await emailSettings.remove(request.scope.project.id)
    return deleted(request.scope.project.id)
  })
}

export default authEmailRoutes
