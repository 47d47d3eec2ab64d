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

// A frozen value's bytes, made once: it never changes, and a hot answer is mostly made of them. Each in its own
// allocation: a small Buffer.from is a slice of Node's shared 8 KB pool, and a kept slice keeps its whole block alive.
const frozenBytes = new FrozenMemo((value: object) => {
  const text = JSON.stringify(value)
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text))
  bytes.write(text)
  return bytes
})
const COMMA = Buffer.from(',')

/**
 * An answer in pieces: the text written since the last frozen value, and the bytes so far. Sent as one Buffer, so
 * Fastify takes its length and the socket writes it as they are; a string of ~35 KB was measured for its length and
 * then encoded again on every request (bench/README.md, "Tracker reads (issue 30), 2026-11-30").
 */
class Pieces {
  readonly bytes: Buffer[] = []
  text = ''

  frozen (value: object): void {
    if (this.text === ',') this.bytes.push(COMMA)
    else if (this.text !== '') this.bytes.push(Buffer.from(this.text))
    this.text = ''
    this.bytes.push(frozenBytes.get(value))
  }

  end (): Buffer {
    if (this.text !== '') this.bytes.push(Buffer.from(this.text))
    return this.bytes.length === 1 ? this.bytes[0] : Buffer.concat(this.bytes)
  }
}

/**
 * The bytes of JSON.stringify(value) in UTF-8, except that a frozen object or
 * array is written once and its bytes reused: a frozen value never changes,
 * and the hot answers are mostly made of them (a page of records unchanged
 * since the last request).
 */
export function writeJson (value: unknown): Buffer {
  const pieces = new Pieces()
  write(value, pieces)
  return pieces.end()
}

function write (value: unknown, out: Pieces): void {
  if (typeof value !== 'object' || value === null) {
    out.text += JSON.stringify(value) ?? 'null'
  } else if (Object.isFrozen(value)) {
    out.frozen(value)
  } else if (Array.isArray(value)) {
    out.text += '['
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out.text += ','
      if (isOmitted(value[i])) out.text += 'null'
      else write(value[i], out)
    }
    out.text += ']'
  } else if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    out.text += JSON.stringify(value)
  } else {
    out.text += '{'
    let first = true
    for (const key of Object.keys(value)) {
      const item = (value as Record<string, unknown>)[key]
      if (isOmitted(item)) continue
      out.text += (first ? '' : ',') + JSON.stringify(key) + ':'
      first = false
      write(item, out)
    }
    out.text += '}'
  }
}

/** What JSON.stringify leaves out of an object (and writes as null in an array). */
function isOmitted (value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol'
}

// Fastify's type says a serializer answers text; a Buffer is sent as it is (its length is the Content-Length).
const bytesWriter = writeJson as unknown as (payload: unknown) => string

// Chosen in preSerialization, after Fastify has set the JSON Content-Type; error answers keep the schema serializer.
function selectWriter (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: null, payload: unknown) => void): void {
  if (reply.statusCode < 300) void reply.serializer(bytesWriter)
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
