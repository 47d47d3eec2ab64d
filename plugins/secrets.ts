import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { createSecretBox, deriveKey, loadMasterKey, type SecretBox } from '../services/crypto.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Seals provider secrets (OAuth client secrets, LLM keys, webhook secrets) at rest. */
    secrets: SecretBox
    /** A key for one purpose (e.g. 'jwt:platform'), derived from the master key so purposes never share a key. */
    deriveSecretKey: (purpose: string) => Buffer
  }
}

async function secretsPlugin (app: FastifyInstance): Promise<void> {
  const masterKey = loadMasterKey({ env: app.config.masterKey, dataDir: app.config.dataDir })
  app.decorate('secrets', createSecretBox(masterKey))
  app.decorate('deriveSecretKey', (purpose: string) => deriveKey(masterKey, purpose))
}

export default fp(secretsPlugin, { name: 'plinth-secrets', fastify: '5.x', dependencies: ['plinth-config'] })
