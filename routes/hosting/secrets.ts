import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppParams, HostingResponses, ImportSecretsBody, PutSecretBody, SecretParams } from '../../schemas/hosting.js'

/** A container app's secrets: names and versions only ever leave the server. */
const secretRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { apps, secrets, timeline } = app.hosting
  const tags = ['hosting']
  const find = async (params: { projectId: string, appId: string }) => await apps.get(params.projectId, params.appId, 'container')
  const NEXT = 'Running instances keep the values they started with; the next deployment, scale or resume gets the new ones.'

  app.get('/:appId/secrets', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.read'),
    schema: { operationId: 'listHostingAppSecrets', tags, summary: 'The app\'s secrets: names and versions, never values', description: 'Needs `hosting.read`.', params: AppParams, response: HostingResponses.secretList }
  }, async (request) => ({ success: true as const, data: await secrets.list((await find(request.params))._id) }))

  app.put('/:appId/secrets/:name', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.manage'),
    schema: { operationId: 'putHostingAppSecret', tags, summary: 'Create or replace one secret', description: `Needs \`hosting.manage\`. Sealed at rest, given to instances as an environment variable, and to builds only with \`buildTime: true\`; masked in every log line. ${NEXT} The platform's own variables (PORT, HOST, PLINTH_*) are refused.`, params: SecretParams, body: PutSecretBody, response: HostingResponses.secret }
  }, async (request) => {
    const record = await find(request.params)
    const secret = await secrets.put(record, request.params.name, request.body.value, request.body.buildTime)
    await timeline.add(record, 'secret.set', `Secret ${secret.name} set (version ${secret.version}${secret.buildTime ? ', build time too' : ''})`)
    return { success: true as const, data: secret }
  })

  app.post('/:appId/secrets/import', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.manage'),
    schema: { operationId: 'importHostingAppSecrets', tags, summary: 'Set every variable of a .env text', description: `Needs \`hosting.manage\`. \`NAME=value\` lines, \`export\` prefixes, quoted values and comments; a line that is none of these is 400 \`APP_HOSTING_ENV_INVALID\` naming it. ${NEXT}`, params: AppParams, body: ImportSecretsBody, response: HostingResponses.secretList }
  }, async (request) => {
    const record = await find(request.params)
    const written = await secrets.import(record, request.body.env, request.body.buildTime)
    await timeline.add(record, 'secret.set', `Secrets ${written.map((secret) => secret.name).join(', ')} set from a .env import`)
    return { success: true as const, data: written }
  })

  app.delete('/:appId/secrets/:name', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.manage'),
    schema: { operationId: 'deleteHostingAppSecret', tags, summary: 'Delete one secret', description: `Needs \`hosting.manage\`. ${NEXT}`, params: SecretParams, response: HostingResponses.deleted }
  }, async (request) => {
    const record = await find(request.params)
    await secrets.delete(record._id, request.params.name)
    await timeline.add(record, 'secret.deleted', `Secret ${request.params.name} deleted`)
    return { success: true as const, data: { id: request.params.name, deleted: true as const } }
  })
}

export default secretRoutes
