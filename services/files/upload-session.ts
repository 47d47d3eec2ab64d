import type { Readable } from 'node:stream'
import type { AppError, ErrorDetails } from '../platform/errors.js'
import { fileErrors } from './errors.js'
import type { WithId } from '../store/types.js'
import { bodyChunks, isValidKeySegment } from './file-store.js'
import { SNIFF_BYTES } from './sniff.js'
import type { UploadSessionT } from '../../schemas/files.js'
import { isoString } from '../platform/iso-dates.js'

/** The upload session document, its public view and the checks on what a client declares; services/files/uploads.ts runs them. */

export type UploadStatus = UploadSessionT['status']

/** Who an upload is for; opaque to this service except projectId, which names the file's folder. */
export type UploadOwner = { projectId: string, table: string, recordId: string, field: string }

export interface StoredFile {
  id: string
  name: string
  size: number
  /** Sniffed from the bytes; downloads are served with it. */
  type: string
  /** What the client said. */
  declaredType: string
  sha256: string
  createdAt: string
}

export interface StartUpload { name: string, size: number, type: string, sha256?: string, createdBy?: string | null }

/** The session as the API shows it; its file is the stored one, which also keeps the type the client declared. */
export type UploadSessionView = Omit<UploadSessionT, 'file'> & { file: StoredFile | null }

export type SessionRecord = UploadOwner & {
  fileId: string
  name: string
  size: number
  type: string
  sha256: string | null
  chunkSize: number
  chunkCount: number
  received: number[]
  /** Chunk writes that landed, rewrites included: tells complete whether a running digest saw them all. */
  writes: number
  /** Chunk writes under way, and until when they may hold off a completer (a writer that died lets go then). */
  writers: number
  writersUntil: Date | null
  status: UploadStatus
  /** Set while completing: who holds the claim, and until when. */
  completer: string | null
  completingUntil: Date | null
  file: StoredFile | null
  expiresAt: Date
  createdAt: Date
  updatedAt: Date
  createdBy: string | null
}
export type Session = WithId<SessionRecord>

/**
 * Where a file's bytes live: under the project, collection, record and field
 * that own it. A file id is only ever looked up inside its owner's folder, so
 * a descriptor naming another record's file finds nothing.
 */
export function fileKey (owner: UploadOwner, fileId: string): string | null {
  const segments = [owner.projectId, owner.table, owner.recordId, owner.field, fileId]
  return segments.every(isValidKeySegment) ? `files/${segments.join('/')}` : null
}

/** The owner and file id a key made by fileKey names; null for any other key. */
export function fileOfKey (key: string): { owner: UploadOwner, fileId: string } | null {
  const segments = key.split('/')
  if (segments.length !== 6 || segments[0] !== 'files' || !segments.every(isValidKeySegment)) return null
  const [, projectId, table, recordId, field, fileId] = segments
  return { owner: { projectId, table, recordId, field }, fileId }
}

/** The folder of every file a record (or, without a record id, a collection) holds. */
export function ownerFolder (projectId: string, table: string, recordId?: string): string | null {
  const segments = recordId === undefined ? [projectId, table] : [projectId, table, recordId]
  return segments.every(isValidKeySegment) ? `files/${segments.join('/')}` : null
}

/** Where a session's chunks are staged, each at its offset. */
export const stagedKey = (sessionId: string): string => `uploads/${sessionId}`

export const invalid = (why: string, details?: ErrorDetails): AppError => fileErrors.uploadInvalid({ why, details })
export const invalidChunk = (why: string, details?: ErrorDetails): AppError => fileErrors.invalidChunk({ why, details })
export const sessionNotFound = (): AppError => fileErrors.uploadSessionNotFound()
export const tooLarge = (limit: number): AppError => fileErrors.fileTooLarge({ limit })
export const completing = (): AppError => fileErrors.uploadCompleting()
export const chunkInFlight = (): AppError => fileErrors.uploadChunkInFlight()

const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/

/** The media type without parameters, lower case; refuses anything that is not `type/subtype`. */
export function normalizeType (type: unknown): string {
  const bare = typeof type === 'string' ? type.split(';')[0].trim().toLowerCase() : ''
  if (!MEDIA_TYPE.test(bare)) throw invalid('type must be a media type such as image/png')
  return bare
}

export function checkName (name: unknown): string {
  // Control characters would end up in Content-Disposition headers.
  if (typeof name !== 'string' || name.length === 0 || name.length > 255 || /[\x00-\x1f\x7f]/.test(name)) {
    throw invalid('name must be 1-255 characters without control characters')
  }
  return name
}

export function checkSha256 (sha256: unknown): string | null {
  if (sha256 === undefined || sha256 === null) return null
  if (typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/i.test(sha256)) throw invalid('sha256 must be 64 hexadecimal digits')
  return sha256.toLowerCase()
}

export function checkProjectId (projectId: unknown): string {
  if (!isValidKeySegment(projectId)) throw invalid('projectId is not a valid id')
  return projectId
}

/** A chunk write is under way and has not outlived its lease. */
export function writing (session: Session, now: Date): boolean {
  return session.writers > 0 && session.writersUntil !== null && session.writersUntil > now
}

export function toView (session: Session, now: Date): UploadSessionView {
  const received = [...session.received].sort((a, b) => a - b)
  const have = new Set(received)
  const missing: number[] = []
  for (let i = 0; i < session.chunkCount; i++) if (!have.has(i)) missing.push(i)
  const lapsed = (session.status === 'open' || session.status === 'completing') && session.expiresAt <= now
  return {
    id: session._id,
    projectId: session.projectId,
    table: session.table,
    recordId: session.recordId,
    field: session.field,
    name: session.name,
    size: session.size,
    type: session.type,
    sha256: session.sha256,
    chunkSize: session.chunkSize,
    chunkCount: session.chunkCount,
    received,
    missing,
    status: lapsed ? 'expired' : session.status,
    expiresAt: isoString(session.expiresAt),
    createdAt: isoString(session.createdAt),
    createdBy: session.createdBy,
    file: session.file
  }
}

/**
 * The body as chunks, refused as soon as it runs past `max` and, when `exact`
 * is set, at its end if short. The error is thrown before the stream ends, so
 * the FileStore's atomic write never commits a wrong-sized object.
 */
export async function * bounded (body: Buffer | Readable, limits: { max: number, exact?: boolean, onTooLong: () => Error, head?: Buffer[] }): AsyncGenerator<Buffer> {
  let seen = 0
  let headBytes = 0
  for await (const chunk of bodyChunks(body)) {
    seen += chunk.length
    if (seen > limits.max) throw limits.onTooLong()
    if (limits.head !== undefined && headBytes < SNIFF_BYTES) {
      limits.head.push(chunk.subarray(0, SNIFF_BYTES - headBytes))
      headBytes += Math.min(chunk.length, SNIFF_BYTES - headBytes)
    }
    yield chunk
  }
  if (limits.exact === true && seen !== limits.max) throw invalidChunk(`The chunk must be exactly ${limits.max} bytes; got ${seen}`, { expected: limits.max, actual: seen })
}

export async function readAll (stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = []
  for await (const chunk of bodyChunks(stream)) parts.push(chunk)
  return Buffer.concat(parts)
}
