import type { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ByteRange } from '../../services/files/file-store.js'
import { fileErrors } from '../../services/files/errors.js'
import { etagFor, ifNoneMatch, parseRange } from '../../services/files/range.js'
import { contentDisposition } from './content-disposition.js'

/** What a download needs to know of a stored file before opening it. */
export interface DownloadedFile { name: string, type: string, size: number, sha256: string }

/**
 * A stored file as the answer, for every route that serves one (record files,
 * tracker attachments): its sniffed type, `Range` for parts (206, or 416 past
 * the end), `If-None-Match` against the ETag (304), and headers that keep a
 * file served from the API's origin from running anything.
 */
export async function sendFile (
  request: FastifyRequest,
  reply: FastifyReply,
  file: DownloadedFile,
  open: (range?: ByteRange) => Promise<{ stream: Readable, size: number }>
): Promise<FastifyReply> {
  const etag = etagFor(file.sha256)
  void reply.headers({
    etag,
    'accept-ranges': 'bytes',
    'cache-control': 'private, no-cache',
    'x-content-type-options': 'nosniff',
    // Stored files are served from the API's origin: nothing in them may run or load anything.
    'content-security-policy': 'default-src \'none\'; sandbox'
  })
  if (ifNoneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send()
  const range = parseRange(request.headers.range, file.size)
  if (range.status === 416) {
    void reply.header('content-range', range.contentRange)
    throw fileErrors.rangeNotSatisfiable({ size: file.size })
  }
  const opened = await open(range.status === 206 ? { start: range.start, end: range.end } : undefined)
  void reply.headers({ 'content-type': file.type, 'content-disposition': contentDisposition(file.name, file.type) })
  if (range.status === 206) {
    return reply.code(206).headers({ 'content-range': range.contentRange, 'content-length': range.length }).send(opened.stream)
  }
  return reply.header('content-length', opened.size).send(opened.stream)
}
