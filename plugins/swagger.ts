import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import { sharedSchemas } from '../schemas/envelope.js'
import { SECURITY_SCHEMES } from './route-auth.js'
import { completeDocument } from '../http/openapi-document.js'

/** Every tag an operation may carry, each described once. */
export const API_TAGS = [
  { name: 'health', description: 'Liveness and readiness probes for orchestrators and load balancers' },
  { name: 'auth', description: 'Platform identity: accounts, sessions, personal access tokens, SSH keys and single sign-on' },
  { name: 'organizations', description: 'Organizations, their members, teams and permission groups, and the permission catalogue' },
  { name: 'projects', description: 'Projects, their end-user auth switch, service tokens and admin tools over end users' },
  { name: 'collections', description: 'Collection definitions: fields, indexes and the rule of each of the eight data methods' },
  { name: 'project auth', description: 'A project\'s end users: register, log in, refresh, log out, change password; and verification for the project\'s servers' },
  { name: 'hosting', description: 'App hosting: container apps and static apps, deployments from an upload or git, instances behind the gateway, secrets, logs, metrics, timeline and usage' },
  { name: 'git', description: 'Git hosting: repositories, branches, tags, history, trees and files, deploy keys and protected branches (the smart-HTTP clone URLs are in each repository\'s view)' },
  { name: 'data', description: 'A project\'s data API: records of each collection, lists with filters and cursors, bulk changes and record files' },
  { name: 'dns', description: 'DNS: providers (the built-in authoritative server, PowerDNS, Cloudflare, Route 53), zones with zone-file import and export, records, and the records that point a hostname at the gateway' },
  { name: 'tracker', description: 'The work tracker: tracker projects with members, states, labels, issue types and estimates; work items with keys, filters, saved views, bulk patches and sync; comments, reactions, links, relations, subscribers, attachments and activity; cycles with burndowns, modules, intake, pages with versions, and automations (the MCP endpoint `/api/projects/{projectId}/tracker/mcp` speaks MCP\'s Streamable HTTP, not the API\'s envelope: docs/tracker.md, "MCP")' },
  { name: 'llm', description: 'LLM configuration of organizations and projects: provider credentials (sealed, shown masked, checked against the provider), settings, the models each credential offers, and how a project\'s values resolve' },
  { name: 'assistant', description: 'Assistant sessions of a project: messages, runs streamed as server-sent events (resumable with Last-Event-ID), every family\'s tools (tracker, collections, git, DNS, hosting) under the caller\'s current permissions, a person\'s approval of each critical tool call' },
  { name: 'auxiliary', description: 'A project\'s automation and configuration: record webhooks (signed events of record writes, with retries, a delivery log, redelivery, replay and a test action) and variables (key/values its hosted apps get as environment variables at their next deploy; secret ones write-only)' },
  { name: 'admin', description: 'The deployment\'s own operations, for platform administrators (the users PLATFORM_ADMINS lists): backups, made by a job, listed, downloaded and deleted' }
]

/**
 * The contract is generated from the route schemas: shared schemas are added
 * once by `$id` and appear under components.schemas with that same name. The
 * same document is served at /openapi.json and browsed at /docs.
 */
async function swaggerPlugin (app: FastifyInstance): Promise<void> {
  for (const schema of sharedSchemas) app.addSchema(schema)

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Plinth API',
        version: '0.1.0',
        description: 'Projects, collections, files and end-user auth behind one API.\n\n' +
          'Every /api answer is an envelope: `{ success: true, data }` or `{ success: false, message, code, details? }`, where ' +
          '`details` always has the shape of `ErrorDetails`. A request that is too slow to arrive (408) or whose headers are ' +
          'too large (431) is answered in the envelope and its connection closed; a server that is draining answers 503 with ' +
          'Retry-After. A method a path does not take answers 405 with Allow.',
        license: { name: 'Apache-2.0', url: 'https://www.apache.org/licenses/LICENSE-2.0' },
        contact: { name: 'Plinth maintainers' }
      },
      servers: [{ url: '/', description: 'The server that serves this document' }],
      tags: API_TAGS,
      components: { securitySchemes: SECURITY_SCHEMES }
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, index) => typeof json.$id === 'string' ? json.$id : `def-${index}`
    },
    transformObject: (document) => completeDocument('openapiObject' in document ? document.openapiObject : {})
  })

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())

  // The reference page is Swagger UI's own bundle served from the package: no CDN, and the policy below
  // keeps the browser from loading anything but this server's assets (the validator badge is off).
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { deepLinking: true, tryItOutEnabled: false },
    validatorUrl: false,
    theme: { title: 'Plinth API reference' },
    staticCSP: "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
  })
}

export default fp(swaggerPlugin, { name: 'plinth-swagger', fastify: '5.x' })
