import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { DnsResponses, GatewayApplyBody, GatewayQuery, ProjectDnsParams } from '../../schemas/dns.js'

const gatewayRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { gateway } = app.dns
  const tags = ['dns']

  app.get('', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('dns.read'),
    schema: { operationId: 'getGatewayInstructions', tags, summary: 'The records that point a hostname at the platform\'s gateway', description: 'Needs `dns.read`. Below an apex a CNAME to the gateway\'s host; at an apex its A/AAAA addresses, or an ALIAS where the provider has one; a TXT under `_plinth-verify.` proving the project\'s claim; the ACME challenge name. Says whether one of the project\'s zones holds the hostname and, if so, which records it already has. 409 `APP_DNS_GATEWAY_NOT_CONFIGURED` when the server has no gateway host or addresses to give.', params: ProjectDnsParams, querystring: GatewayQuery, response: DnsResponses.gateway }
  }, async (request) => ({ success: true as const, data: await gateway.instructions(request.params.projectId, request.query.hostname) }))

  app.post('/apply', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('dns.manage'),
    schema: { operationId: 'applyGatewayInstructions', tags, summary: 'Create the gateway records in the project\'s zone that holds the hostname', description: 'Needs `dns.manage`. Adds the missing records together (existing ones are kept); 409 `APP_DNS_ZONE_NOT_HOSTED` when no zone of the project holds the hostname, and the records rules\' 409s (a CNAME beside other records) when the zone has records in the way.', params: ProjectDnsParams, body: GatewayApplyBody, response: DnsResponses.gateway }
  }, async (request) => ({ success: true as const, data: await gateway.apply(request.params.projectId, request.body.hostname) }))
}

export default gatewayRoutes
