import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { DnsResponses, GatewayApplyBody, GatewayQuery, ProjectDnsParams } from '../../schemas/dns.js'
import { dnsErrors } from '../../services/dns/errors.js'
import { ok } from '../replies.js'
import { RECORD_WRITES } from './records.js'

const gatewayRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { gateway } = app.dns
  const tags = ['dns']

  app.get('', {
    config: { permission: 'dns.read', errors: [dnsErrors.invalidName, dnsErrors.gatewayNotConfigured, dnsErrors.providerFailed] },
    schema: {
      operationId: 'getGatewayInstructions',
      tags,
      summary: 'The records that point a hostname at the platform\'s gateway',
      description: 'Below an apex a CNAME to the gateway\'s host; ' +
        'at an apex its A/AAAA addresses, or an ALIAS where the provider has one; ' +
        'a TXT under `_plinth-verify.` proving the project\'s claim; the ACME challenge name. ' +
        'Says whether one of the project\'s zones holds the hostname and, if so, which records it already has.',
      params: ProjectDnsParams,
      querystring: GatewayQuery,
      response: DnsResponses.gateway
    }
  }, async (request) => ok(await gateway.instructions(request.scope.project.id, request.query.hostname)))

  app.post('/apply', {
    config: { permission: 'dns.manage', errors: [dnsErrors.gatewayNotConfigured, dnsErrors.zoneNotHosted, ...RECORD_WRITES] },
    schema: {
      operationId: 'applyGatewayInstructions',
      tags,
      summary: 'Create the gateway records in the project\'s zone that holds the hostname',
      description: 'Adds the missing records together (existing ones are kept); ' +
        'a zone whose records stand in the way (a CNAME beside other records) is refused by the records\' rules.',
      params: ProjectDnsParams,
      body: GatewayApplyBody,
      response: DnsResponses.gateway
    }
  }, async (request) => ok(await gateway.apply(request.scope.project.id, request.body.hostname)))
}

export default gatewayRoutes
