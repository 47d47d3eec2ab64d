import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  BulkChangeBody, CreateRecordBody, DnsResponses, ListRecordsQuery, ProjectDnsParams, RecordBody, RecordParams
} from '../../schemas/dns.js'
import { dnsErrors } from '../../services/dns/errors.js'
import { created, deleted, ok } from '../replies.js'

/** What any write of records may meet: each record's rules, the zone's as a whole, and its provider. */
export const RECORD_WRITES = [
  dnsErrors.invalidName, dnsErrors.nameOutsideZone, dnsErrors.invalidContent, dnsErrors.invalidTtl, dnsErrors.soaManaged,
  dnsErrors.recordExists, dnsErrors.cnameConflict, dnsErrors.tooManyRecords, dnsErrors.concurrentChange, dnsErrors.providerFailed
]

const RULES = 'Names are canonical (lower case, absolute, no trailing dot; `@` and relative names are read against the zone) ' +
  'and lie inside the zone; content is checked per type; a CNAME is alone at its name and never at the apex; SOA records are read-only. ' +
  'Every change bumps the SOA serial.'

const recordRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { records } = app.dns
  const tags = ['dns']

  app.get('', {
    config: { permission: 'dns.read', parent: 'zone', errors: [dnsErrors.providerFailed] },
    schema: {
      operationId: 'listDnsRecords',
      tags,
      summary: 'A zone\'s records, optionally of one name or type',
      description: 'Read from the zone\'s provider, SOA included.',
      params: ProjectDnsParams,
      querystring: ListRecordsQuery,
      response: DnsResponses.recordList
    }
  }, async (request) => {
    const { zoneId: _zone, ...filter } = request.query
    return ok(await records.list(request.scope.zone, filter))
  })

  app.post('', {
    config: { permission: 'dns.manage', parent: 'zone', errors: RECORD_WRITES },
    schema: {
      operationId: 'createDnsRecord',
      tags,
      summary: 'Add a record to a zone',
      description: `${RULES} The same record twice is refused.`,
      params: ProjectDnsParams,
      body: CreateRecordBody,
      response: DnsResponses.recordCreated
    }
  }, async (request, reply) => {
    const { zoneId: _zone, ...input } = request.body
    return created(reply, await records.create(request.scope.zone, input))
  })

  app.post('/bulk', {
    config: {
      permission: 'dns.manage',
      parent: 'zone',
      errors: [...RECORD_WRITES, dnsErrors.emptyChange, dnsErrors.tooManyChanges, dnsErrors.recordNotFound]
    },
    schema: {
      operationId: 'changeDnsRecords',
      tags,
      summary: 'Create, update and delete records of one zone together',
      description: `All or nothing: every change is checked against the zone as it will be, then applied in one provider call. ${RULES}`,
      params: ProjectDnsParams,
      body: BulkChangeBody,
      response: DnsResponses.bulk
    }
  }, async (request) => {
    const { zoneId: _zone, ...changes } = request.body
    return ok(await records.change(request.scope.zone, changes))
  })

  app.get('/:recordId', {
    config: { permission: 'dns.read', parent: 'recordZone', errors: [dnsErrors.recordNotFound, dnsErrors.providerFailed] },
    schema: {
      operationId: 'getDnsRecord',
      tags,
      summary: 'One record',
      params: RecordParams,
      response: DnsResponses.record
    }
  }, async (request) => ok(await records.get(request.scope.recordZone, request.params.recordId)))

  app.put('/:recordId', {
    config: { permission: 'dns.manage', parent: 'recordZone', errors: [...RECORD_WRITES, dnsErrors.recordNotFound] },
    schema: {
      operationId: 'updateDnsRecord',
      tags,
      summary: 'Replace a record',
      description: `The answer carries the record's new id when its name, type or content changed. ${RULES}`,
      params: RecordParams,
      body: RecordBody,
      response: DnsResponses.record
    }
  }, async (request) => ok(await records.update(request.scope.recordZone, request.params.recordId, request.body)))

  app.delete('/:recordId', {
    config: {
      permission: 'dns.manage',
      parent: 'recordZone',
      errors: [dnsErrors.recordNotFound, dnsErrors.soaManaged, dnsErrors.concurrentChange, dnsErrors.providerFailed]
    },
    schema: {
      operationId: 'deleteDnsRecord',
      tags,
      summary: 'Delete a record',
      description: 'SOA records cannot be deleted.',
      params: RecordParams,
      response: DnsResponses.deleted
    }
  }, async (request) => {
    await records.delete(request.scope.recordZone, request.params.recordId)
    return deleted(request.params.recordId)
  })
}

export default recordRoutes
