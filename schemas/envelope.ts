import { Type, type TSchema } from '@sinclair/typebox'

/** Every successful `/api` answer: `{ success: true, data }`. */
export const Envelope = <T extends TSchema>(data: T) => Type.Object({
  success: Type.Literal(true),
  data
})

/** Every failed answer: `{ success: false, message, code, details? }`. */
export const ErrorEnvelope = Type.Object({
  success: Type.Literal(false),
  message: Type.String({ description: 'Human-readable explanation' }),
  code: Type.String({ description: 'Stable machine-readable code, APP_SCREAMING_SNAKE', examples: ['APP_VALIDATION_FAILED'] }),
  details: Type.Optional(Type.Unknown({ description: 'Structured context, e.g. the offending fields' }))
}, { $id: 'ErrorEnvelope' })

type ErrorRef = ReturnType<typeof errorRef>
const errorRef = (description: string) => Type.Ref(ErrorEnvelope, { description })

const STATUS_TEXT: Record<number, string> = {
  400: 'Invalid request',
  401: 'Missing or invalid credentials',
  403: 'Not allowed',
  404: 'Not found',
  405: 'Method disabled',
  409: 'Conflict',
  413: 'Payload too large',
  415: 'Unsupported media type',
  416: 'Range not satisfiable',
  410: 'Gone',
  422: 'Unprocessable',
  429: 'Too many requests',
  503: 'Unavailable'
}

/** Error responses a route declares, each the shared ErrorEnvelope. */
export function errorResponses<S extends number[]> (...statuses: S): { [K in S[number]]: ErrorRef } {
  const responses: Record<number, ErrorRef> = {}
  for (const status of statuses) {
    responses[status] = errorRef(STATUS_TEXT[status] ?? 'Error')
  }
  return responses as { [K in S[number]]: ErrorRef }
}

/** Schemas registered once with `addSchema` so routes can reference them by `$id`. */
export const sharedSchemas = [ErrorEnvelope]
