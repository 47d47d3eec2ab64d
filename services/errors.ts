/**
 * Coded errors thrown by services. The HTTP layer maps `status` and `code`
 * into the error envelope; services never know about HTTP beyond this number.
 */
export class AppError extends Error {
  readonly code: string
  readonly status: number
  readonly details?: unknown

  constructor (code: string, status: number, message: string, details?: unknown) {
    super(message)
    this.name = 'AppError'
    this.code = code
    this.status = status
    this.details = details
  }
}

export const badRequest = (code: string, message: string, details?: unknown) => new AppError(code, 400, message, details)
export const unauthorized = (code: string, message: string, details?: unknown) => new AppError(code, 401, message, details)
export const forbidden = (code: string, message: string, details?: unknown) => new AppError(code, 403, message, details)
export const notFound = (code: string, message: string, details?: unknown) => new AppError(code, 404, message, details)
export const conflict = (code: string, message: string, details?: unknown) => new AppError(code, 409, message, details)
