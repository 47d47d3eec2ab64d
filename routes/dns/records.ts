import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { BulkChangeBody, CreateRecordBody, DnsResponses, ListRecordsQuery, ProjectDnsParams, RecordBody, RecordParams } from '../../schemas/dns.js'
import { createdAt } from '../location.js'

const RULES = 'Names are canonical (lower case, absolute, no trailing dot; `@` and relative names are read against the zone) and must lie inside the zone (400 `APP_DNS_NAME_OUTSIDE_ZONE`); content is checked per type (400 `APP_DNS_INVALID_CONTENT`); a CNAME is alone at its name and never at the apex (409 `APP_DNS_CNAME_CONFLICT`); SOA records are read-only (400 `APP_DNS_SOA_MANAGED`). Every change bumps the SOA serial.'

const recordRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { records } = app.dns
  const tags = ['dns']

  app.get('', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('dns.read'),
    schema: { operationId: 'listDnsRecords', tags, summary: 'A zone\'s records, optionally of one name or type', description: 'Needs `dns.read`. Read from the zone\'s provider, SOA included.', params: ProjectDnsParams, querystring: ListRecordsQuery, response: DnsResponses.recordList }
  }, async (request) => {
    const { zoneId, ...filter } = request.query
    return { success: true as const, data: await records.list(request.params.projectId, zoneId, filter) }
  })

  app.post('', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('dns.manage'),
    schema: { operationId: 'createDnsRecord', tags, summary: 'Add a record to a zone', description: `Needs \`dns.manage\`. ${RULES} The same record twice is 409 \`APP_DNS_RECORD_EXISTS\`.`, params: ProjectDnsParams, body: CreateRecordBody, response: DnsResponses.recordCreated }
  }, async (request, reply) => {
    const { zoneId, ...input } = request.body
    const record = await records.create(request.params.projectId, zoneId, input)
    return reply.code(201).header('location', createdAt(request, record.id)).send({ success: true as const, data: record })
  })

  app.post('/bulk', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('dns.manage'),
    schema: { operationId: 'changeDnsRecords', tags, summary: 'Create, update and delete records of one zone together', description: `Needs \`dns.manage\`. All or nothing: every change is checked against the zone as it will be, then applied in one provider call. ${RULES}`, params: ProjectDnsParams, body: BulkChangeBody, response: DnsResponses.bulk }
  }, async (request) => {
    const { zoneId, ...changes } = request.body
    return { success: true as const, data: await records.change(request.params.projectId, zoneId, changes) }
  })

  app.get('/:recordId', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('dns.read'),
    schema: { operationId: 'getDnsRecord', tags, summary: 'One record', description: 'Needs `dns.read`.', params: RecordParams, response: DnsResponses.record }
  }, async (request) => ({ success: true as const, data: await records.get(request.params.projectId, request.params.recordId) }))

  app.put('/:recordId', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('dns.manage'),
    schema: { operationId: 'updateDnsRecord', tags, summary: 'Replace a record', description: `Needs \`dns.manage\`. The answer carries the record's new id when its name, type or content changed. ${RULES}`, params: RecordParams, body: RecordBody, response: DnsResponses.recordUpdated }
  }, async (request) => ({ success: true as const, data: await records.update(request.params.projectId, request.params.recordId, request.body) }))

  app.delete('/:recordId', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('dns.manage'),
    schema: { operationId: 'deleteDnsRecord', tags, summary: 'Delete a record', description: 'Needs `dns.manage`. SOA records cannot be deleted (400 `APP_DNS_SOA_MANAGED`).', params: RecordParams, response: DnsResponses.deleted }
  }, async (request) => {
    await records.delete(request.params.projectId, request.params.recordId)
    return { success: true as const, data: { id: request.params.recordId, deleted: true as const } }
  })
}

export default recordRoutes
