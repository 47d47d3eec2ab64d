import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateProviderBody, DnsResponses, ProjectDnsParams, ProviderParams } from '../../schemas/dns.js'
import { dnsErrors } from '../../services/dns/errors.js'
import { created, deleted, ok } from '../replies.js'

const providerRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { providers } = app.dns
  const tags = ['dns']

  app.get('', {
    config: { permission: 'dns.read' },
    schema: {
      operationId: 'listDnsProviders',
      tags,
      summary: 'The built-in server and the project\'s configured DNS providers',
      description: 'Credentials are never returned.',
      params: ProjectDnsParams,
      response: DnsResponses.providerList
    }
  }, async (request) => ok(await providers.list(request.scope.project.id)))

  app.post('', {
    config: {
      permission: 'dns.manage',
      errors: [dnsErrors.providerInvalid, dnsErrors.providerEndpointInternal, dnsErrors.tooManyProviders]
    },
    schema: {
      operationId: 'createDnsProvider',
      tags,
      summary: 'Configure a PowerDNS server, a Cloudflare account or Route 53',
      description: 'The credentials are sealed at rest and never shown again; `POST …/providers/{providerId}/test` checks them.',
      params: ProjectDnsParams,
      body: CreateProviderBody,
      response: DnsResponses.providerCreated
    }
  }, async (request, reply) => created(reply, await providers.create(request.scope.project.id, request.body)))

  app.get('/:providerId', {
    config: { permission: 'dns.read', errors: [dnsErrors.providerNotFound] },
    schema: {
      operationId: 'getDnsProvider',
      tags,
      summary: 'One DNS provider',
      params: ProviderParams,
      response: DnsResponses.provider
    }
  }, async (request) => ok(await providers.get(request.scope.project.id, request.params.providerId)))

  app.post('/:providerId/test', {
    config: { permission: 'dns.manage', errors: [dnsErrors.providerNotFound] },
    schema: {
      operationId: 'testDnsProvider',
      tags,
      summary: 'Check that the provider answers with its credentials',
      description: '`ok: false` comes with the reason: unreachable (refused, unknown host, timeout), credentials refused, ' +
        'or what the provider said.',
      params: ProviderParams,
      response: DnsResponses.providerTest
    }
  }, async (request) => ok(await providers.test(request.scope.project.id, request.params.providerId)))

  app.delete('/:providerId', {
    config: { permission: 'dns.manage', errors: [dnsErrors.providerNotFound, dnsErrors.providerInUse] },
    schema: {
      operationId: 'deleteDnsProvider',
      tags,
      summary: 'Remove a configured provider',
      description: 'Refused while zones are on it; the built-in server cannot be removed.',
      params: ProviderParams,
      response: DnsResponses.deleted
    }
  }, async (request) => {
    await providers.delete(request.scope.project.id, request.params.providerId)
    return deleted(request.params.providerId)
  })
}

export default providerRoutes
