import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { FrozenMemo } from '../services/cache/frozen-memo.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Write this route's success answer with writeJson instead of the
     * serializer compiled from its response schema: for hot routes whose
     * answers are mostly shared, frozen values (pages of records read shared),
     * and only where a bench row shows it pays. Equal to the schema serializer
     * for every value the schema accepts (test/plugins/fast-json.test.ts).
     */
    fastJson?: boolean
  }
}

const texts = new FrozenMemo((value: object) => JSON.stringify(value))

/**
 * JSON.stringify, except that a frozen object or array is written once and
 * its text reused: a frozen value never changes, and the hot answers are
 * mostly made of them (a page of records unchanged since the last request).
 */
export function writeJson (value: unknown): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value) ?? 'null'
  if (Object.isFrozen(value)) return texts.get(value)
  if (Array.isArray(value)) {
    let out = '['
    for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + (isOmitted(value[i]) ? 'null' : writeJson(value[i]))
    return out + ']'
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return JSON.stringify(value)
  let out = '{'
  for (const key of Object.keys(value)) {
    const item = (value as Record<string, unknown>)[key]
    if (isOmitted(item)) continue
    out += (out.length === 1 ? '' : ',') + JSON.stringify(key) + ':' + writeJson(item)
  }
  return out + '}'
}

/** What JSON.stringify leaves out of an object (and writes as null in an array). */
function isOmitted (value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol'
}

// Chosen in preSerialization, after Fastify has set the JSON Content-Type; error answers keep the schema serializer.
function selectWriter (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: null, payload: unknown) => void): void {
  if (reply.statusCode < 300) void reply.serializer(writeJson)
  done(null, payload)
}

/** Routes with `config.fastJson` write their success answers with writeJson. */
async function fastJsonPlugin (app: FastifyInstance): Promise<void> {
  app.addHook('onRoute', (route: RouteOptions) => {
    if (route.config?.fastJson !== true) return
    const existing = route.preSerialization === undefined ? [] : Array.isArray(route.preSerialization) ? route.preSerialization : [route.preSerialization]
    route.preSerialization = [...existing, selectWriter]
  })
}

export default fp(fastJsonPlugin, { name: 'plinth-fast-json', fastify: '5.x' })
