import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  CreateZoneBody, DnsResponses, ExportZoneQuery, ImportZoneBody, ProjectDnsParams, ZONE_FILE_TYPE, ZoneParams
} from '../../schemas/dns.js'
import { dnsErrors } from '../../services/dns/errors.js'
import { created, deleted, ok } from '../replies.js'
import { RECORD_WRITES } from './records.js'

/** What creating a zone may meet, from its name to its provider. */
const ZONE_CREATION = [
  dnsErrors.invalidName, dnsErrors.providerNotFound, dnsErrors.tooManyZones, dnsErrors.zoneExists, dnsErrors.zoneReserved,
  dnsErrors.zoneOverlap, dnsErrors.providerFailed
]

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
    config: { permission: 'dns.read' },
    schema: {
      operationId: 'listDnsZones',
      tags,
      summary: 'The project\'s DNS zones, by name',
      params: ProjectDnsParams,
      response: DnsResponses.zoneList
    }
  }, async (request) => ok(await zones.list(request.scope.project.id)))

  app.post('', {
    config: { permission: 'dns.manage', errors: ZONE_CREATION },
    schema: {
      operationId: 'createDnsZone',
      tags,
      summary: 'Create a zone on the built-in server or a configured provider',
      description: 'The zone starts with its SOA and NS records. ' +
        'A name already served, or inside or around another project\'s built-in zone, is refused.',
      params: ProjectDnsParams,
      body: CreateZoneBody,
      response: DnsResponses.zoneCreated
    }
  }, async (request, reply) => created(reply, zones.view(await zones.create(request.scope.project.id, request.body))))

  app.post('/import', {
    config: { permission: 'dns.manage', errors: [...ZONE_CREATION, dnsErrors.zoneFileInvalid, ...RECORD_WRITES] },
    schema: {
      operationId: 'importDnsZone',
      tags,
      summary: 'Create a zone from a zone file',
      description: 'The zone and all its records are created together or not at all; ' +
        'a line that cannot be read, or a record that breaks the rules, is refused naming the line. ' +
        'The file\'s SOA and apex NS records are left out: the provider keeps its own. `$INCLUDE` and `$GENERATE` are refused.',
      params: ProjectDnsParams,
      body: ImportZoneBody,
      response: DnsResponses.zoneCreated
    }
  }, async (request, reply) => {
    const zone = await zoneFiles.import(request.scope.project.id, request.body)
    return created(reply, zones.view(zone), { fromAction: true })
  })

  app.get('/:zoneId/export', {
    config: { permission: 'dns.read', parent: 'zone', errors: [dnsErrors.providerFailed] },
    schema: {
      operationId: 'exportDnsZone',
      tags,
      summary: 'The zone as a zone file',
      description: `Every record, SOA first, names relative to \`$ORIGIN\`; importing it again gives the same records.
        JSON by default (\`{ name, zoneFile }\` in the envelope); with \`Accept: text/dns\` or \`?format=text\` the
        master file itself (\`text/dns\`) with a download name.`,
      params: ZoneParams,
      querystring: ExportZoneQuery,
      response: DnsResponses.zoneFile
    }
  }, async (request, reply) => {
    const exported = await zoneFiles.export(request.scope.zone)
    if (!wantsMasterFile(request.query.format, request.headers.accept)) return ok(exported)
    // Zone names are letters, digits, hyphens, underscores and dots; anything else would not survive a quoted filename.
    const filename = `${exported.name.replace(/[^A-Za-z0-9._-]/g, '_')}.zone`
    return await reply.type(`${ZONE_FILE_TYPE}; charset=utf-8`)
      .header('content-disposition', `attachment; filename="${filename}"`)
      .send(exported.zoneFile)
  })

  app.get('/:zoneId', {
    config: { permission: 'dns.read', parent: 'zone' },
    schema: {
      operationId: 'getDnsZone',
      tags,
      summary: 'One zone',
      params: ZoneParams,
      response: DnsResponses.zone
    }
  }, async (request) => ok(zones.view(request.scope.zone)))

  app.delete('/:zoneId', {
    config: { permission: 'dns.manage', parent: 'zone', errors: [dnsErrors.providerFailed] },
    schema: {
      operationId: 'deleteDnsZone',
      tags,
      summary: 'Delete a zone and its records at its provider',
      description: 'The built-in server stops answering for it at once.',
      params: ZoneParams,
      response: DnsResponses.deleted
    }
  }, async (request) => {
    await zones.delete(request.scope.zone)
    return deleted(request.scope.zone.id)
  })
}

export default zoneRoutes
