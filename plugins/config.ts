import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../services/config.js'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
  }
}

async function configPlugin (app: FastifyInstance, options: { config: Config }): Promise<void> {
  app.decorate('config', options.config)
}

export default fp(configPlugin, { name: 'plinth-config', fastify: '5.x' })
