import type { components } from '../generated/plinth.js'
import { PlinthError, SERVER_CODES } from '../core/errors.js'
import { callJson, type Http } from '../core/http.js'

export type UploadSession = components['schemas']['UploadSession']
export type FileDescriptor = components['schemas']['FileDescriptor']

export interface UploadProgress {
  /** Bytes the server has acknowledged (chunks on its disk). */
  sentBytes: number
  totalBytes: number
  /** The chunk just acknowledged. */
  chunk: number
  chunkCount: number
}

export interface UploadOptions {
  /** The file's name as stored; a File's own name, else `file`. */
  name?: string
  /** The declared type (the server sniffs the real one). */
  type?: string
  /** The whole file's SHA-256 (hex), checked by the server on completion; computed with WebCrypto when not given, skipped with false. */
  sha256?: string | false
  /** Called after each acknowledged chunk. */
  onProgress?: (progress: UploadProgress) => void
  /** Continue this upload session (from a previous run) instead of starting one: only its missing chunks are sent. */
  sessionId?: string
  /** Called with the session once it is known, so a caller can keep its id to resume later. */
  onSession?: (session: { id: string, chunkCount: number, chunkSize: number }) => void
  /** How many times a dropped connection is survived by asking the server which chunks it has. Default 5. */
  maxResumes?: number
  signal?: AbortSignal
}

export interface UploadResult<R> { file: FileDescriptor, record: R }

interface FilePath { projectId: string, table: string, id: string, field: string }

function hex (bytes: ArrayBuffer): string {
  return Array.from(new Uint8Array(bytes), (byte) => byte.toString(16).padStart(2, '0')).join('')
}

async function sha256Of (file: Blob): Promise<string> {
  return hex(await globalThis.crypto.subtle.digest('SHA-256', await file.arrayBuffer()))
}

const pause = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

const segment = (value: string): string => encodeURIComponent(value)

/** Where a record file field's upload sessions live. */
export function recordUploadsPath (path: FilePath): string {
  return `/api/p/${segment(path.projectId)}/${segment(path.table)}/${segment(path.id)}/files/${segment(path.field)}/upload-sessions`
}

/**
 * The resumable upload protocol (record files and hosting sources share it,
 * under `sessionsPath`): start (or look up) a session, send each missing
 * chunk, and when a connection drops ask the server which chunks it holds
 * (`received`/`missing`) and send only the rest; then complete, which checks
 * size and sha256 and attaches the file.
 */
/** What every upload session answers with (record files' sessions say more). */
interface SessionState { id: string, size: number, chunkSize: number, chunkCount: number, missing: number[] }

interface StartFields { name: string, size: number, type: string, sha256: string | undefined }

export async function resumableUpload<Result> (http: Http, sessionsPath: string, file: Blob, options: UploadOptions = {},
  startBody: (fields: StartFields) => unknown = (fields) => fields): Promise<Result> {
  let session: SessionState
  if (options.sessionId === undefined) {
    const sha256 = options.sha256 === false ? undefined : options.sha256 ?? await sha256Of(file)
    const own = 'name' in file ? file.name : undefined
    const name = options.name ?? (typeof own === 'string' && own !== '' ? own : 'file')
    const type = options.type ?? (file.type === '' ? 'application/octet-stream' : file.type)
    session = await callJson<SessionState>(http, 'POST', sessionsPath, startBody({ name, size: file.size, type, sha256 }))
  } else {
    session = await callJson<SessionState>(http, 'GET', `${sessionsPath}/${segment(options.sessionId)}`)
  }
  options.onSession?.(session)
  if (session.size !== file.size) throw new PlinthError(0, 'SDK_UPLOAD_MISMATCH', `the session expects ${session.size} bytes, the file has ${file.size}`)
  const sessionPath = `${sessionsPath}/${segment(session.id)}`

  const chunkBytes = (index: number): number => Math.min(file.size, (index + 1) * session.chunkSize) - index * session.chunkSize
  const held = (state: SessionState): number => state.size - state.missing.reduce((sum, index) => sum + chunkBytes(index), 0)
  let sent = held(session)
  let missing = [...session.missing]
  let resumes = 0
  while (missing.length > 0) {
    const index = missing[0]
    try {
      await sendChunk(http, `${sessionPath}/chunks/${index}`, file.slice(index * session.chunkSize, index * session.chunkSize + chunkBytes(index)), options.signal)
      missing.shift()
      sent += chunkBytes(index)
      options.onProgress?.({ sentBytes: sent, totalBytes: file.size, chunk: index, chunkCount: session.chunkCount })
    } catch (error) {
      if (!(error instanceof PlinthError) || error.status !== 0 || resumes >= (options.maxResumes ?? 5) || options.signal?.aborted === true) throw error
      resumes++
      // The connection dropped: the server's word on what it holds decides what is sent again.
      const state = await callJson<SessionState>(http, 'GET', sessionPath)
      missing = [...state.missing]
      sent = held(state)
    }
  }
  for (let attempt = 0; ; attempt++) {
    try {
      return await callJson<Result>(http, 'POST', `${sessionPath}/complete`)
    } catch (error) {
      // A chunk write cut off by a dropped connection may still be settling on the server: wait for it, a while.
      if (!(error instanceof PlinthError) || error.code !== SERVER_CODES.uploadChunkInFlight || attempt >= 50) throw error
      await pause(100)
    }
  }
}

async function sendChunk (http: Http, path: string, bytes: Blob, signal?: AbortSignal): Promise<void> {
  const request = new Request(`${http.baseUrl}${path}`, { method: 'PUT', body: bytes, headers: { 'content-type': 'application/octet-stream' }, signal })
  const response = await http.once(request)
  if (!response.ok) throw PlinthError.fromAnswer(response, await response.json().catch(() => null))
  await response.body?.cancel()
}

export async function uploadFile (http: Http, path: FilePath, file: Blob, options: UploadOptions = {}): Promise<UploadResult<Record<string, unknown>>> {
  return await resumableUpload(http, recordUploadsPath(path), file, options)
}

export interface DownloadOptions {
  /** A byte range, as `Range: bytes=start-end` (end inclusive, optional). */
  range?: { start: number, end?: number }
  signal?: AbortSignal
}

export interface Download {
  /** The bytes, read as they arrive. */
  stream: ReadableStream<Uint8Array>
  /** The sniffed Content-Type. */
  type: string | null
  /** Content-Length, when the server sent one. */
  size: number | null
  etag: string | null
  response: Response
}

export async function downloadFile (http: Http, path: FilePath & { fileId: string }, options: DownloadOptions = {}): Promise<Download> {
  const range = options.range === undefined ? undefined : `bytes=${options.range.start}-${options.range.end ?? ''}`
  const { data, error, response } = await http.api.GET('/api/p/{projectId}/{table}/{id}/files/{field}/{fileId}', {
    params: { path },
    headers: range === undefined ? undefined : { range },
    parseAs: 'stream',
    signal: options.signal
  })
  if (!response.ok || data === undefined || data === null) throw PlinthError.fromAnswer(response, error)
  const length = response.headers.get('content-length')
  return { stream: data, type: response.headers.get('content-type'), size: length === null ? null : Number(length), etag: response.headers.get('etag'), response }
}
