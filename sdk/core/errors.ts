import type { components } from '../generated/plinth.js'

export type ErrorEnvelope = components['schemas']['ErrorEnvelope']
export type ErrorDetails = NonNullable<ErrorEnvelope['details']>

/** The server's codes the SDK itself acts on (docs/errors.md lists them all). */
export const SERVER_CODES = {
  /** A bearer token refused as such (expired, revoked): the SDK refreshes the session once and resends. */
  invalidToken: 'APP_INVALID_TOKEN',
  /** A token of another kind than the route takes, or another project's: never refreshed; `details.allowed` names the security schemes the route takes. */
  wrongTokenKind: 'APP_WRONG_TOKEN_KIND',
  /** A chunk of a resumable upload that another request is still sending: the SDK waits and tries again. */
  uploadChunkInFlight: 'APP_UPLOAD_CHUNK_IN_FLIGHT'
} as const

/**
 * Every failure the SDK reports: the server's `{ success: false, message,
 * code, details? }` envelope with the HTTP status, or a status of 0 and code
 * `SDK_NETWORK` when no answer arrived at all.
 */
export class PlinthError extends Error {
  override readonly name = 'PlinthError'
  readonly status: number
  readonly code: string
  readonly details: ErrorDetails | undefined

  constructor (status: number, code: string, message: string, details?: ErrorDetails, options?: { cause?: unknown }) {
    super(message, options)
    this.status = status
    this.code = code
    this.details = details
  }

  /** The error an answer carries: its envelope when it has one, else its status line. */
  static fromAnswer (response: Response, body: unknown): PlinthError {
    if (isEnvelope(body)) return new PlinthError(response.status, body.code, body.message, body.details)
    return new PlinthError(response.status, `HTTP_${response.status}`, `${response.status} ${response.statusText}`.trim())
  }
}

function isEnvelope (body: unknown): body is ErrorEnvelope {
  if (typeof body !== 'object' || body === null) return false
  const { success, code, message } = body as Record<string, unknown>
  return success === false && typeof code === 'string' && typeof message === 'string'
}
