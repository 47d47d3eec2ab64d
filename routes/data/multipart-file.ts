import type { IncomingMessage } from 'node:http'
import { Readable } from 'node:stream'
import type { FastifyRequest } from 'fastify'
import type { Multipart, MultipartFile } from '@fastify/multipart'
import { AppError } from '../../services/platform/errors.js'
import { fileErrors } from '../../services/files/errors.js'

/** What one form may carry: the file, and a few text fields a client library adds beside it (ignored). */
export const FORM_LIMITS = { files: 1, fields: 10, parts: 12 }

const LIMIT_ERRORS = new Set(['FST_PARTS_LIMIT', 'FST_FILES_LIMIT', 'FST_FIELDS_LIMIT'])

/**
 * Whatever the parser or the request stream throws is the client's form:
 * malformed (no boundary, broken part headers), cut off (a part or the body
 * ends early) or over the limits. Our own coded errors pass through.
 */
function formError (error: unknown): AppError {
  if (error instanceof AppError) return error
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code === 'string' && LIMIT_ERRORS.has(code)) {
    return fileErrors.multipartTooManyParts({ limit: FORM_LIMITS.fields })
  }
  return fileErrors.multipartInvalid()
}

/**
 * Whether the body carried the form's close delimiter (`CRLF--boundary--`).
 * @fastify/multipart reports a form that simply stops after a whole part as
 * a normal end, so a body cut off there would otherwise pass for complete.
 * Listening beside the parser's pipe is safe: both see every chunk.
 */
function watchCloseDelimiter (raw: IncomingMessage): () => boolean {
  const boundary = /boundary=(?:"([^"]+)"|([^\s;]+))/i.exec(raw.headers['content-type'] ?? '')
  if (boundary === null) return () => false
  const marker = Buffer.from(`\r\n--${boundary[1] ?? boundary[2]}--`)
  let seen = false
  // The parser reads the body as if a CRLF came first, so a form may open straight with its delimiter.
  let tail = Buffer.from('\r\n')
  const onData = (chunk: Buffer): void => {
    // The marker may straddle two chunks: look at the seam, then inside the chunk.
    seen = Buffer.concat([tail, chunk.subarray(0, marker.length - 1)]).includes(marker) || chunk.includes(marker)
    if (seen) { raw.removeListener('data', onData); return }
    const kept = marker.length - 1
    tail = Buffer.from(chunk.length >= kept ? chunk.subarray(chunk.length - kept) : Buffer.concat([tail, chunk]).subarray(-kept))
  }
  raw.on('data', onData)
  return () => seen
}

/**
 * The file's bytes, then the rest of the form read to its end: the stream
 * ends only once the whole form has arrived well-formed, so a form that breaks
 * after its file (a second file, too many fields, no close delimiter) fails
 * the upload and nothing is kept.
 */
async function * fileThenRest (
  file: MultipartFile,
  parts: AsyncIterableIterator<Multipart>,
  closed: () => boolean
): AsyncGenerator<Buffer> {
  try {
    yield * file.file
    for await (const part of parts) void part
  } catch (error) {
    // The parser ends a file's stream without saying why; the reason (a limit, a parse error) is queued next on the form.
    throw formError(await parts.next().then(() => error, (reason: unknown) => reason))
  }
  if (!closed()) throw formError(null)
}

/** Not for-await: leaving that loop would close the iterator the rest of the form is then read from. */
async function firstFile (parts: AsyncIterableIterator<Multipart>): Promise<MultipartFile | undefined> {
  for (;;) {
    const next = await parts.next()
    if (next.done === true) return undefined
    if (next.value.type === 'file') return next.value
  }
}

/** The one file of a multipart/form-data request, as a stream for the file service; fields before it are skipped. */
export async function formFile (request: FastifyRequest): Promise<{ name: string, type: string, body: Readable }> {
  const parts = request.parts()
  // Attached in the same tick as the parser's pipe (set up by the first next()), so neither misses a chunk.
  const closed = watchCloseDelimiter(request.raw)
  const file = await firstFile(parts).catch((error: unknown) => { throw formError(error) })
  if (file === undefined) throw closed() ? fileErrors.fileRequired() : formError(null)
  return { name: file.filename, type: file.mimetype, body: Readable.from(fileThenRest(file, parts, closed)) }
}
