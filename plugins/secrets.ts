import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { createSecretBox, deriveKey, loadMasterKey, parseKeyText, type SecretBox } from '../services/platform/crypto.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Seals provider secrets (OAuth client secrets, LLM keys, webhook secrets) at rest; opens those sealed under a retired master key too. */
    secrets: SecretBox
    /** A key for one purpose (e.g. 'jwt:platform'), derived from the master key so purposes never share a key. */
    deriveSecretKey: (purpose: string) => Buffer
  }
}

async function secretsPlugin (app: FastifyInstance): Promise<void> {
  const masterKey = loadMasterKey({ env: app.config.masterKey, dataDir: app.config.dataDir })
  // Validated by loadConfig: each parses.
  const retired = app.config.retiredMasterKeys.map((text) => parseKeyText(text) as Buffer)
  app.decorate('secrets', createSecretBox(masterKey, retired))
  app.decorate('deriveSecretKey', (purpose: string) => deriveKey(masterKey, purpose))
}

export default fp(secretsPlugin, { name: 'plinth-secrets', fastify: '5.x', dependencies: ['plinth-config'] })
