import type { ErrorDetailsT } from '../schemas/envelope.js'

export type ErrorDetails = ErrorDetailsT

/**
 * Coded errors thrown by services. The HTTP layer maps `status` and `code`
 * into the error envelope; services never know about HTTP beyond this number.
 * `details` has one shape for every error, so clients can type it.
 */
export class AppError extends Error {
  readonly code: string
  readonly status: number
  readonly details?: ErrorDetails

  constructor (code: string, status: number, message: string, details?: ErrorDetails) {
    super(message)
    this.name = 'AppError'
    this.code = code
    this.status = status
    this.details = details
  }
}

/** Details naming one offending part of the request; `field` is the collection field a filter, sort or selection names. */
export function fieldIssue (path: string, message: string, field?: string): ErrorDetails {
  return { fields: [field === undefined ? { path, message } : { path, message, field }] }
}

export const badRequest = (code: string, message: string, details?: ErrorDetails) => new AppError(code, 400, message, details)
export const unauthorized = (code: string, message: string, details?: ErrorDetails) => new AppError(code, 401, message, details)
export const forbidden = (code: string, message: string, details?: ErrorDetails) => new AppError(code, 403, message, details)
export const notFound = (code: string, message: string, details?: ErrorDetails) => new AppError(code, 404, message, details)
export const conflict = (code: string, message: string, details?: ErrorDetails) => new AppError(code, 409, message, details)
