import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateZoneBody, DnsResponses, ProjectDnsParams, ZoneParams } from '../../schemas/dns.js'
import { createdAt } from '../location.js'

const zoneRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { zones } = app.dns
  const tags = ['dns']

  app.get('', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('dns.read'),
    schema: { operationId: 'listDnsZones', tags, summary: 'The project\'s DNS zones, by name', description: 'Needs `dns.read`.', params: ProjectDnsParams, response: DnsResponses.zoneList }
  }, async (request) => ({ success: true as const, data: await zones.list(request.params.projectId) }))

  app.post('', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('dns.manage'),
    schema: { operationId: 'createDnsZone', tags, summary: 'Create a zone on the built-in server or a configured provider', description: 'Needs `dns.manage`. The zone starts with its SOA and NS records. A name already served (409 `APP_DNS_ZONE_EXISTS`) or inside or around another project\'s built-in zone (409 `APP_DNS_ZONE_OVERLAP`) is refused; a provider that refuses gives 502 `APP_DNS_PROVIDER_FAILED`.', params: ProjectDnsParams, body: CreateZoneBody, response: DnsResponses.zoneCreated }
  }, async (request, reply) => {
    const zone = await zones.create(request.params.projectId, request.body)
    return reply.code(201).header('location', createdAt(request, zone.id)).send({ success: true as const, data: zone })
  })

  app.get('/:zoneId', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('dns.read'),
    schema: { operationId: 'getDnsZone', tags, summary: 'One zone', description: 'Needs `dns.read`.', params: ZoneParams, response: DnsResponses.zone }
  }, async (request) => ({ success: true as const, data: await zones.get(request.params.projectId, request.params.zoneId) }))

  app.delete('/:zoneId', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('dns.manage'),
    schema: { operationId: 'deleteDnsZone', tags, summary: 'Delete a zone and its records at its provider', description: 'Needs `dns.manage`. The built-in server stops answering for it at once.', params: ZoneParams, response: DnsResponses.deleted }
  }, async (request) => {
    await zones.delete(request.params.projectId, request.params.zoneId)
    return { success: true as const, data: { id: request.params.zoneId, deleted: true as const } }
  })
}

export default zoneRoutes
