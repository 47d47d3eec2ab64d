import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import type { FastifyInstance } from 'fastify'
import { sharedSchemas } from '../schemas/envelope.js'
import { SECURITY_SCHEMES } from './route-auth.js'

export const API_TAGS = [
  { name: 'health', description: 'Liveness and readiness probes' },
  { name: 'auth', description: 'Platform identity: accounts, sessions, personal access tokens, SSH keys, SSO' }
]

/**
 * The contract is generated from the route schemas: shared schemas are added
 * once by `$id` and appear under components.schemas with that same name.
 */
async function swaggerPlugin (app: FastifyInstance): Promise<void> {
  for (const schema of sharedSchemas) app.addSchema(schema)

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Plinth API',
        version: '0.1.0',
        description: 'Projects, collections, files, end-user auth, git, hosting, DNS, tracker and assistant behind one API. ' +
          'Every /api answer is an envelope: `{ success: true, data }` or `{ success: false, message, code, details? }`.'
      },
      servers: [{ url: '/' }],
      tags: API_TAGS,
      components: {
        securitySchemes: SECURITY_SCHEMES
      }
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, index) => typeof json.$id === 'string' ? json.$id : `def-${index}`
    }
  })

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
}

export default fp(swaggerPlugin, { name: 'plinth-swagger', fastify: '5.x' })
