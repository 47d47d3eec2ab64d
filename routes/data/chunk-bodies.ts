import type { FastifyInstance, FastifyRequest } from 'fastify'
import { errorCodes } from 'fastify'
import { fileErrors } from '../../services/files/errors.js'

/**
 * Upload chunk bodies (`application/octet-stream`) read into reused buffers
 * of the largest chunk size: allocating a fresh 8 MiB buffer per chunk made
 * the garbage collector run a full collection every few chunks. A request
 * gives its buffer back once its handler is done with the bytes; the service
 * keeps no reference to them. Idle buffers are dropped after a while, so an
 * idle server holds none.
 */
const MAX_IDLE_BUFFERS = 4
const IDLE_MS = 30_000

declare module 'fastify' {
  interface FastifyRequest {
    releaseChunkBody: (() => void) | null
  }
}

export function readChunkBodies (app: FastifyInstance, limit: number): void {
  const idle: Buffer[] = []
  let dropIdle: NodeJS.Timeout | null = null
  const release = (buffer: Buffer): void => {
    if (idle.length < MAX_IDLE_BUFFERS) idle.push(buffer)
    dropIdle?.refresh()
    dropIdle ??= setTimeout(() => { idle.length = 0; dropIdle = null }, IDLE_MS).unref()
  }

  app.decorateRequest('releaseChunkBody', null)
  app.addHook('onResponse', async (request) => { request.releaseChunkBody?.() })
  app.addContentTypeParser('application/octet-stream', (request: FastifyRequest, payload, done) => {
    const declared = request.headers['content-length']
    if (declared !== undefined && Number(declared) > limit) {
      done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE(), undefined)
      return
    }
    const buffer = idle.pop() ?? Buffer.allocUnsafeSlow(limit)
    let length = 0
    let settled = false
    const settle = (error: Error | null): void => {
      if (settled) return
      settled = true
      payload.removeListener('data', onData)
      if (error !== null) {
        release(buffer)
        done(error, undefined)
        return
      }
      request.releaseChunkBody = () => { request.releaseChunkBody = null; release(buffer) }
      done(null, buffer.subarray(0, length))
    }
    const onData = (piece: Buffer): void => {
      if (length + piece.length > limit) {
        settle(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE())
        return
      }
      piece.copy(buffer, length)
      length += piece.length
    }
    payload.on('data', onData)
    payload.once('end', () => { settle(null) })
    // A client that goes away mid-body is its own doing, not a server failure to log as one.
    const cutOff = (): void => { settle(fileErrors.bodyIncomplete()) }
    payload.once('error', cutOff)
    payload.once('close', () => { if (!payload.readableEnded) cutOff() })
  })
}
