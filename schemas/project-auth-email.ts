import { Type, type Static } from '@sinclair/typebox'
import { Envelope } from './envelope.js'
import { DateTime, Deleted } from './common.js'

/** The flows a project mails links for; each has its own template. */
export const EMAIL_FLOWS = ['verification', 'passwordReset', 'emailChange', 'magicLink'] as const
export type EmailFlow = typeof EMAIL_FLOWS[number]

export const MAX_TEMPLATE_BODY = 8000
export const MAX_TEMPLATE_SUBJECT = 200

const Email = Type.String({ minLength: 3, maxLength: 254, description: 'Trimmed and lower-cased before use' })

export const EmailTemplate = Type.Object({
  subject: Type.String({ minLength: 1, maxLength: MAX_TEMPLATE_SUBJECT }),
  text: Type.String({ minLength: 1, maxLength: MAX_TEMPLATE_BODY, description: 'Plain text; must contain `{{link}}`' })
}, { $id: 'EmailTemplate', additionalProperties: false, description: 'Placeholders `{{link}}`, `{{email}}` and `{{project}}` are replaced by their values, nothing else is evaluated' })

const TemplateRef = Type.Ref(EmailTemplate)
const Templates = Type.Object({
  verification: Type.Optional(TemplateRef),
  passwordReset: Type.Optional(TemplateRef),
  emailChange: Type.Optional(TemplateRef),
  magicLink: Type.Optional(TemplateRef)
}, { additionalProperties: false, description: 'A flow left out is mailed with the built-in template' })

const SmtpSecurity = Type.Union([Type.Literal('tls'), Type.Literal('starttls'), Type.Literal('none')], {
  description: '`tls`: TLS from the first byte (port 465); `starttls`: STARTTLS required; `none`: plain (only for a relay the operator allowed on a private network)'
})

export const SmtpSettingsBody = Type.Object({
  host: Type.String({ minLength: 1, maxLength: 253, description: 'Resolved and checked against internal addresses when saved and at each send' }),
  port: Type.Integer({ minimum: 1, maximum: 65535 }),
  security: SmtpSecurity,
  user: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  password: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'Sealed at rest and never returned; left out, the stored one is kept' }))
}, { additionalProperties: false })

export const EmailSettingsBody = Type.Object({
  smtp: SmtpSettingsBody,
  sender: Type.String({ minLength: 3, maxLength: 320, description: 'The From address, e.g. `Acme <no-reply@acme.example>`' }),
  linkBaseUrl: Type.String({ minLength: 1, maxLength: 2048, description: 'The app page links point to (http or https); the flow and token are added as query parameters `flow` and `token`' }),
  requireVerifiedEmail: Type.Optional(Type.Boolean({ description: 'true: login, sign-up and refresh are refused until the end user\'s email is verified. Default false' })),
  templates: Type.Optional(Templates)
}, { additionalProperties: false })

export const EmailSettings = Type.Object({
  smtp: Type.Object({
    host: Type.String(),
    port: Type.Integer(),
    security: SmtpSecurity,
    user: Type.Optional(Type.String()),
    hasPassword: Type.Boolean({ description: 'Whether a password is stored; it is never returned' })
  }),
  sender: Type.String(),
  linkBaseUrl: Type.String(),
  requireVerifiedEmail: Type.Boolean(),
  templates: Templates,
  updatedAt: DateTime
}, { $id: 'ProjectEmailSettings' })

export const EmailAddressBody = Type.Object({ email: Email }, { additionalProperties: false })
export const NewEmailBody = Type.Object({ newEmail: Email }, { additionalProperties: false })
const Token = Type.String({ minLength: 1, maxLength: 256, description: 'The `token` query parameter of the link' })
export const EmailTokenBody = Type.Object({ token: Token }, { additionalProperties: false })
export const PasswordResetConfirmBody = Type.Object({
  token: Token,
  newPassword: Type.String({ minLength: 1, maxLength: 256, description: 'At least 8 characters and not the email address' })
}, { additionalProperties: false })

const Requested = Type.Object({
  requested: Type.Literal(true, { description: 'Always true: whether a mail went out is not told, so the answer says nothing of which addresses have accounts' })
})

export const EmailFlowResponses = {
  settings: { 200: Envelope(Type.Ref(EmailSettings)) },
  settingsDeleted: { 200: Envelope(Deleted) },
  requested: { 202: Envelope(Requested) },
  verified: { 200: Envelope(Type.Object({ verified: Type.Literal(true) })) },
  passwordReset: { 200: Envelope(Type.Object({ passwordReset: Type.Literal(true, { description: 'The new password holds; every session the user held has ended' }) })) },
  emailChanged: { 200: Envelope(Type.Object({ email: Type.String({ description: 'The account\'s address now, verified; every session the user held has ended' }) })) }
}

export const projectAuthEmailSchemas = [EmailTemplate, EmailSettings]
export type EmailSettingsBodyT = Static<typeof EmailSettingsBody>
export type EmailSettingsT = Static<typeof EmailSettings>
export type EmailTemplateT = Static<typeof EmailTemplate>
