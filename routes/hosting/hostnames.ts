import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppHostnamesParams, BindHostnameBody, HostnameParams, HostnameResponses, IssueCertificateBody } from '../../schemas/hosting-hostnames.js'
import type { AppKind } from '../../services/hosting/records.js'
import { createdAt } from '../location.js'

/**
 * Custom hostnames of an app, under `…/hostnames` and its alias `…/domains`:
 * bind (answers the DNS records to create), verify (routes it once its
 * records are right), unbind; and, under `hostnames`, its TLS certificate.
 */
const hostnameRoutes: FastifyPluginAsyncTypebox<{ kind: AppKind, alias: 'hostnames' | 'domains' }> = async (app, { kind, alias }) => {
  const { apps, hostnames, certificates, releases } = app.hosting
  const tags = ['hosting']
  const what = `${kind === 'static' ? 'StaticApp' : 'HostingApp'}${alias === 'domains' ? 'Domain' : 'Hostname'}`
  const same = alias === 'domains' ? ' The same as `…/hostnames`.' : ''
  const find = async (params: { projectId: string, appId: string }) => await apps.get(params.projectId, params.appId, kind)

  app.get(`/:appId/${alias}`, {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.read'),
    schema: { operationId: `list${what}s`, tags, summary: 'The app\'s custom hostnames, pending and verified', description: `Needs \`hosting.read\`.${same}`, params: AppHostnamesParams, response: HostnameResponses.list }
  }, async (request) => {
    const record = await find(request.params)
    return { success: true as const, data: await hostnames.list(record.projectId, record._id) }
  })

  app.post(`/:appId/${alias}`, {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.manage'),
    schema: { operationId: `bind${what}`, tags, summary: 'Bind a hostname: answers the DNS records that route it and prove the project\'s claim', description: `Needs \`hosting.manage\`. The name stays pending until verified. One name reaches one app on the whole server (409 \`APP_HOSTING_HOSTNAME_TAKEN\`); the platform's own names are refused (409 \`APP_HOSTING_HOSTNAME_RESERVED\`).${same}`, params: AppHostnamesParams, body: BindHostnameBody, response: HostnameResponses.bound }
  }, async (request, reply) => {
    const record = await find(request.params)
    const bound = await hostnames.bind(record.projectId, record._id, request.body.hostname)
    return reply.code(201).header('location', createdAt(request, bound.hostname.hostname)).send({ success: true as const, data: bound })
  })

  app.get(`/:appId/${alias}/:hostname`, {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.read'),
    schema: { operationId: `get${what}`, tags, summary: 'One hostname with the DNS records it needs', description: `Needs \`hosting.read\`. \`present\` tells which records one of the project's zones already holds.${same}`, params: HostnameParams, response: HostnameResponses.instructions }
  }, async (request) => {
    const record = await find(request.params)
    return { success: true as const, data: await hostnames.instructions(record.projectId, record._id, request.params.hostname) }
  })

  app.post(`/:appId/${alias}/:hostname/verify`, {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.manage'),
    schema: { operationId: `verify${what}`, tags, summary: 'Check the hostname\'s DNS records; once right, the gateway routes it to the app', description: `Needs \`hosting.manage\`. 409 \`APP_HOSTING_HOSTNAME_UNVERIFIED\` with one entry per record that is missing or wrong.${same}`, params: HostnameParams, response: HostnameResponses.verified }
  }, async (request) => {
    const record = await find(request.params)
    const verified = await hostnames.verify(record.projectId, record._id, request.params.hostname)
    await releases.publish(record._id)
    return { success: true as const, data: verified }
  })

  app.delete(`/:appId/${alias}/:hostname`, {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.manage'),
    schema: { operationId: `unbind${what}`, tags, summary: 'Unbind a hostname: the gateway stops routing it and its certificate is dropped', description: `Needs \`hosting.manage\`.${same}`, params: HostnameParams, response: HostnameResponses.deleted }
  }, async (request) => {
    const record = await find(request.params)
    await hostnames.unbind(record.projectId, record._id, request.params.hostname)
    await releases.publish(record._id)
    return { success: true as const, data: { deleted: true as const } }
  })

  if (alias === 'domains') return

  app.get('/:appId/certificates', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.read'),
    schema: { operationId: `list${kind === 'static' ? 'StaticApp' : 'HostingApp'}Certificates`, tags, summary: 'The TLS certificates of the app\'s hostnames', description: 'Needs `hosting.read`. Issuer, validity, renewal time and the last ACME problem; never the key.', params: AppHostnamesParams, response: HostnameResponses.certificateList }
  }, async (request) => {
    const record = await find(request.params)
    return { success: true as const, data: await certificates.list(record.projectId, record._id) }
  })

  app.post('/:appId/hostnames/:hostname/certificate', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.manage'),
    schema: { operationId: `issue${what}Certificate`, tags, summary: 'Obtain a TLS certificate for a verified hostname through ACME', description: 'Needs `hosting.manage`. DNS-01 when one of the project\'s zones holds the name, else HTTP-01 through the gateway; renewed before it expires. 409 `APP_HOSTING_ACME_NOT_CONFIGURED` without HOSTING_ACME_DIRECTORY_URL, `APP_HOSTING_HOSTNAME_NOT_VERIFIED` before verification; 502 `APP_HOSTING_CERTIFICATE_FAILED` with the CA\'s problem.', params: HostnameParams, body: IssueCertificateBody, response: HostnameResponses.certificateIssued }
  }, async (request) => {
    const record = await find(request.params)
    return { success: true as const, data: await certificates.issue(record.projectId, record._id, request.params.hostname, request.body) }
  })
}

export default hostnameRoutes
