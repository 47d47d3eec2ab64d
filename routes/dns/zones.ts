import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateZoneBody, DnsResponses, ExportZoneQuery, ImportZoneBody, ProjectDnsParams, ZONE_FILE_TYPE, ZoneParams } from '../../schemas/dns.js'
import { createdAt } from '../location.js'

/**
 * Whether the client asks for the master file itself: `?format=text`, or an
 * Accept that names text/dns and ranks it at least as high as JSON. Anything
 * else, no Accept and wildcards included, gets the envelope API clients expect.
 */
function wantsMasterFile (format: 'json' | 'text' | undefined, accept: string | undefined): boolean {
  if (format !== undefined) return format === 'text'
  const ranks = new Map<string, number>()
  for (const range of (accept ?? '').toLowerCase().split(',')) {
    const [type, ...params] = range.split(';').map((part) => part.trim())
    const q = params.find((param) => param.startsWith('q='))
    ranks.set(type, q === undefined ? 1 : Number(q.slice(2)) || 0)
  }
  const dns = ranks.get(ZONE_FILE_TYPE) ?? 0
  return dns > 0 && dns >= (ranks.get('application/json') ?? 0)
}

const zoneRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { zones, zoneFiles } = app.dns
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

  app.post('/import', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('dns.manage'),
    schema: { operationId: 'importDnsZone', tags, summary: 'Create a zone from a zone file', description: 'Needs `dns.manage`. The zone and all its records are created together or not at all; a line that cannot be read or a record that breaks the rules is 400 `APP_DNS_ZONE_FILE_INVALID` naming the line. The file\'s SOA and apex NS records are left out: the provider keeps its own. `$INCLUDE` and `$GENERATE` are refused.', params: ProjectDnsParams, body: ImportZoneBody, response: DnsResponses.zoneCreated }
  }, async (request, reply) => {
    const zone = await zoneFiles.import(request.params.projectId, request.body)
    return reply.code(201).header('location', `${request.url.split('?')[0].replace(/\/import$/, '')}/${zone.id}`).send({ success: true as const, data: zone })
  })

  app.get('/:zoneId/export', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('dns.read'),
    schema: { operationId: 'exportDnsZone', tags, summary: 'The zone as a zone file', description: 'Needs `dns.read`. Every record, SOA first, names relative to `$ORIGIN`; importing it again gives the same records. JSON by default (`{ name, zoneFile }` in the envelope); with `Accept: text/dns` or `?format=text` the master file itself (`text/dns`) with a download name.', params: ZoneParams, querystring: ExportZoneQuery, response: DnsResponses.zoneFile }
  }, async (request, reply) => {
    const exported = await zoneFiles.export(request.params.projectId, request.params.zoneId)
    if (!wantsMasterFile(request.query.format, request.headers.accept)) return { success: true as const, data: exported }
    // Zone names are letters, digits, hyphens, underscores and dots; anything else would not survive a quoted filename.
    const filename = `${exported.name.replace(/[^A-Za-z0-9._-]/g, '_')}.zone`
    return await reply.type(`${ZONE_FILE_TYPE}; charset=utf-8`).header('content-disposition', `attachment; filename="${filename}"`).send(exported.zoneFile)
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
