import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  AppHostnamesParams, BindHostnameBody, HostnameParams, HostnameResponses, IssueCertificateBody
} from '../../schemas/hosting-hostnames.js'
import { dnsErrors } from '../../services/dns/errors.js'
import { hostingErrors as e } from '../../services/hosting/errors.js'
import type { AppKind } from '../../services/hosting/records.js'
import { appParent } from '../../plugins/hosting.js'
import { created, deleted, ok } from '../replies.js'

/** What a hostname named in the path may meet. */
const BOUND = [e.invalidHostname, e.hostnameNotFound]

/**
 * Custom hostnames of an app, under `…/hostnames` and its alias `…/domains`:
 * bind (answers the DNS records to create), verify (routes it once its
 * records are right), unbind; and, under `hostnames`, its TLS certificate.
 */
const hostnameRoutes: FastifyPluginAsyncTypebox<{ kind: AppKind, alias: 'hostnames' | 'domains' }> = async (app, { kind, alias }) => {
  const { hostnames, certificates, releases } = app.hosting
  const tags = ['hosting']
  const what = `${kind === 'static' ? 'StaticApp' : 'HostingApp'}${alias === 'domains' ? 'Domain' : 'Hostname'}`
  const same = alias === 'domains' ? 'The same as `…/hostnames`.' : undefined
  const parent = appParent(kind)
  app.routeDefaults({ parent })

  app.get(`/:appId/${alias}`, {
    config: { permission: 'hosting.read' },
    schema: {
      operationId: `list${what}s`,
      tags,
      summary: 'The app\'s custom hostnames, pending and verified',
      description: same,
      params: AppHostnamesParams,
      response: HostnameResponses.list
    }
  }, async (request) => {
    const record = request.scope[parent]
    return ok(await hostnames.list(record.projectId, record._id))
  })

  app.post(`/:appId/${alias}`, {
    config: {
      permission: 'hosting.manage',
      errors: [e.invalidHostname, e.tooManyHostnames, e.hostnameBound, e.hostnameTaken, e.hostnameReserved, dnsErrors.gatewayNotConfigured]
    },
    schema: {
      operationId: `bind${what}`,
      tags,
      summary: 'Bind a hostname: answers the DNS records that route it and prove the project\'s claim',
      description: 'The name stays pending until verified. ' +
        'One name reaches one app on the whole server; the platform\'s own names are refused.' +
        (same === undefined ? '' : ` ${same}`),
      params: AppHostnamesParams,
      body: BindHostnameBody,
      response: HostnameResponses.bound
    }
  }, async (request, reply) => {
    const record = request.scope[parent]
    const bound = await hostnames.bind(record.projectId, record._id, request.body.hostname)
    return created(reply, bound, { id: bound.hostname.hostname })
  })

  app.get(`/:appId/${alias}/:hostname`, {
    config: { permission: 'hosting.read', errors: [...BOUND, dnsErrors.gatewayNotConfigured] },
    schema: {
      operationId: `get${what}`,
      tags,
      summary: 'One hostname with the DNS records it needs',
      description: `\`present\` tells which records one of the project's zones already holds.${same === undefined ? '' : ` ${same}`}`,
      params: HostnameParams,
      response: HostnameResponses.instructions
    }
  }, async (request) => {
    const record = request.scope[parent]
    return ok(await hostnames.instructions(record.projectId, record._id, request.params.hostname))
  })

  app.post(`/:appId/${alias}/:hostname/verify`, {
    config: { permission: 'hosting.manage', errors: [...BOUND, e.hostnameUnverified] },
    schema: {
      operationId: `verify${what}`,
      tags,
      summary: 'Check the hostname\'s DNS records; once right, the gateway routes it to the app',
      description: same,
      params: HostnameParams,
      response: HostnameResponses.verified
    }
  }, async (request) => {
    const record = request.scope[parent]
    const verified = await hostnames.verify(record.projectId, record._id, request.params.hostname)
    await releases.publish(record._id)
    return ok(verified)
  })

  app.delete(`/:appId/${alias}/:hostname`, {
    config: { permission: 'hosting.manage', errors: BOUND },
    schema: {
      operationId: `unbind${what}`,
      tags,
      summary: 'Unbind a hostname: the gateway stops routing it and its certificate is dropped',
      description: same,
      params: HostnameParams,
      response: HostnameResponses.deleted
    }
  }, async (request) => {
    const record = request.scope[parent]
    const hostname = await hostnames.unbind(record.projectId, record._id, request.params.hostname)
    await releases.publish(record._id)
    return deleted(hostname)
  })

  if (alias === 'domains') return

  app.get('/:appId/certificates', {
    config: { permission: 'hosting.read' },
    schema: {
      operationId: `list${kind === 'static' ? 'StaticApp' : 'HostingApp'}Certificates`,
      tags,
      summary: 'The TLS certificates of the app\'s hostnames',
      description: 'Issuer, validity, renewal time and the last ACME problem; never the key.',
      params: AppHostnamesParams,
      response: HostnameResponses.certificateList
    }
  }, async (request) => {
    const record = request.scope[parent]
    return ok(await certificates.list(record.projectId, record._id))
  })

  app.post('/:appId/hostnames/:hostname/certificate', {
    config: {
      permission: 'hosting.manage',
      errors: [...BOUND, e.hostnameNotVerified, e.acmeNotConfigured, e.zoneNotHosted, e.certificateInProgress, e.certificateFailed]
    },
    schema: {
      operationId: `issue${what}Certificate`,
      tags,
      summary: 'Obtain a TLS certificate for a verified hostname through ACME',
      description: 'DNS-01 when one of the project\'s zones holds the name, else HTTP-01 through the gateway; renewed before it expires. ' +
        'Without HOSTING_ACME_DIRECTORY_URL, or before the hostname is verified, it is refused; a CA\'s refusal carries its problem.',
      params: HostnameParams,
      body: IssueCertificateBody,
      response: HostnameResponses.certificateIssued
    }
  }, async (request) => {
    const record = request.scope[parent]
    return ok(await certificates.issue(record.projectId, record._id, request.params.hostname, request.body))
  })
}

export default hostnameRoutes
