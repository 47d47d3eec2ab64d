import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppParams, HostingResponses, ImportSecretsBody, PutSecretBody, SecretParams } from '../../schemas/hosting.js'
import { hostingErrors as e } from '../../services/hosting/errors.js'
import { deleted, ok } from '../replies.js'

const NEXT = 'Running instances keep the values they started with; the next deployment, scale or resume gets the new ones.'

/** A container app's secrets: names and versions only ever leave the server. */
const secretRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { secrets, timeline } = app.hosting
  const tags = ['hosting']
  app.routeDefaults({ parent: 'app' })

  app.get('/:appId/secrets', {
    config: { permission: 'hosting.read' },
    schema: {
      operationId: 'listHostingAppSecrets',
      tags,
      summary: 'The app\'s secrets: names and versions, never values',
      params: AppParams,
      response: HostingResponses.secretList
    }
  }, async (request) => ok(await secrets.list(request.scope.app._id)))

  app.put('/:appId/secrets/:name', {
    config: { permission: 'hosting.manage', errors: [e.secretInvalid, e.secretsLimit] },
    schema: {
      operationId: 'putHostingAppSecret',
      tags,
      summary: 'Create or replace one secret',
      description: 'Sealed at rest, given to instances as an environment variable, and to builds only with `buildTime: true`; ' +
        `masked in every log line. ${NEXT} The platform's own variables (PORT, HOST, PLINTH_*) are refused.`,
      params: SecretParams,
      body: PutSecretBody,
      response: HostingResponses.secret
    }
  }, async (request) => {
    const record = request.scope.app
    const secret = await secrets.put(record, request.params.name, request.body.value, request.body.buildTime)
    const buildTime = secret.buildTime ? ', build time too' : ''
    await timeline.add(record, 'secret.set', `Secret ${secret.name} set (version ${secret.version}${buildTime})`)
    return ok(secret)
  })

  app.post('/:appId/secrets/import', {
    config: { permission: 'hosting.manage', errors: [e.envInvalid, e.secretInvalid, e.secretsLimit] },
    schema: {
      operationId: 'importHostingAppSecrets',
      tags,
      summary: 'Set every variable of a .env text',
      description: '`NAME=value` lines, `export` prefixes, quoted values and comments; ' +
        `a line that is none of these is refused naming it. ${NEXT}`,
      params: AppParams,
      body: ImportSecretsBody,
      response: HostingResponses.secretList
    }
  }, async (request) => {
    const record = request.scope.app
    const written = await secrets.import(record, request.body.env, request.body.buildTime)
    await timeline.add(record, 'secret.set', `Secrets ${written.map((secret) => secret.name).join(', ')} set from a .env import`)
    return ok(written)
  })

  app.delete('/:appId/secrets/:name', {
    config: { permission: 'hosting.manage', errors: [e.secretNotFound] },
    schema: {
      operationId: 'deleteHostingAppSecret',
      tags,
      summary: 'Delete one secret',
      description: NEXT,
      params: SecretParams,
      response: HostingResponses.deleted
    }
  }, async (request) => {
    const record = request.scope.app
    await secrets.delete(record._id, request.params.name)
    await timeline.add(record, 'secret.deleted', `Secret ${request.params.name} deleted`)
    return deleted(request.params.name)
  })
}

export default secretRoutes
