import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateProviderBody, DnsResponses, ProjectDnsParams, ProviderParams } from '../../schemas/dns.js'
import { createdAt } from '../location.js'

const providerRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { providers, zones } = app.dns
  const tags = ['dns']

  app.get('', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('dns.read'),
    schema: { operationId: 'listDnsProviders', tags, summary: 'The built-in server and the project\'s configured DNS providers', description: 'Needs `dns.read`. Credentials are never returned.', params: ProjectDnsParams, response: DnsResponses.providerList }
  }, async (request) => ({ success: true as const, data: await providers.list(request.params.projectId) }))

  app.post('', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('dns.manage'),
    schema: { operationId: 'createDnsProvider', tags, summary: 'Configure a PowerDNS server, a Cloudflare account or Route 53', description: 'Needs `dns.manage`. The credentials are sealed at rest and never shown again; `POST …/providers/{providerId}/test` checks them. A kind without its endpoint or credential is 400 `APP_DNS_PROVIDER_INVALID`.', params: ProjectDnsParams, body: CreateProviderBody, response: DnsResponses.providerCreated }
  }, async (request, reply) => {
    const provider = await providers.create(request.params.projectId, request.body)
    return reply.code(201).header('location', createdAt(request, provider.id)).send({ success: true as const, data: provider })
  })

  app.get('/:providerId', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('dns.read'),
    schema: { operationId: 'getDnsProvider', tags, summary: 'One DNS provider', description: 'Needs `dns.read`.', params: ProviderParams, response: DnsResponses.provider }
  }, async (request) => ({ success: true as const, data: await providers.get(request.params.projectId, request.params.providerId) }))

  app.post('/:providerId/test', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('dns.manage'),
    schema: { operationId: 'testDnsProvider', tags, summary: 'Check that the provider answers with its credentials', description: 'Needs `dns.manage`. `ok: false` comes with the reason: unreachable (refused, unknown host, timeout), credentials refused, or what the provider said.', params: ProviderParams, response: DnsResponses.providerTest }
  }, async (request) => ({ success: true as const, data: await providers.test(request.params.projectId, request.params.providerId) }))

  app.delete('/:providerId', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('dns.manage'),
    schema: { operationId: 'deleteDnsProvider', tags, summary: 'Remove a configured provider', description: 'Needs `dns.manage`. Refused with 409 `APP_DNS_PROVIDER_IN_USE` while zones are on it; the built-in server cannot be removed.', params: ProviderParams, response: DnsResponses.providerDeleted }
  }, async (request) => {
    const { projectId, providerId } = request.params
    await providers.delete(projectId, providerId, await zones.countOnProvider(projectId, providerId))
    return { success: true as const, data: { id: providerId, deleted: true as const } }
  })
}

export default providerRoutes
