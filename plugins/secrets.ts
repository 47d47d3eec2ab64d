import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { createSecretBox, loadMasterKey, type SecretBox } from '../services/crypto.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Seals provider secrets (OAuth client secrets, LLM keys, webhook secrets) at rest. */
    secrets: SecretBox
  }
}

async function secretsPlugin (app: FastifyInstance): Promise<void> {
  const masterKey = loadMasterKey({ env: app.config.masterKey, dataDir: app.config.dataDir })
  app.decorate('secrets', createSecretBox(masterKey))
}

export default fp(secretsPlugin, { name: 'plinth-secrets', fastify: '5.x', dependencies: ['plinth-config'] })
