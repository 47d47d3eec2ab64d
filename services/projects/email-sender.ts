import { createTransport } from 'nodemailer'
import { isIP } from 'node:net'
import type { AddressGuard } from '../outbound/internal-addresses.js'
import { checkSmtpHost, type OpenedEmailSettings } from './email-settings.js'
import type { EmailFlow } from '../../schemas/project-auth-email.js'

/** One mail of a flow, rendered: where it goes and what it says. */
export interface OutgoingMail { to: string, subject: string, text: string }

/** Sends one mail through a project's SMTP server; throws when the server refuses it or cannot be reached. */
export type SendMail = (settings: OpenedEmailSettings, mail: OutgoingMail) => Promise<void>

const BUILT_IN: Record<EmailFlow, { subject: string, text: string }> = {
  verification: { subject: 'Verify your email address for {{project}}', text: 'Follow this link to verify {{email}}:\n\n{{link}}\n\nIf you did not sign up, ignore this mail.' },
  passwordReset: { subject: 'Reset your password for {{project}}', text: 'Follow this link to choose a new password for {{email}}:\n\n{{link}}\n\nIf you did not ask for it, ignore this mail: your password stays as it is.' },
  emailChange: { subject: 'Confirm your new email address for {{project}}', text: 'Follow this link to make {{email}} the address of your account:\n\n{{link}}\n\nIf you did not ask for it, ignore this mail.' },
  magicLink: { subject: 'Sign in to {{project}}', text: 'Follow this link to sign in as {{email}}:\n\n{{link}}\n\nIf you did not ask for it, ignore this mail.' }
}

const PLACEHOLDER = /\{\{(link|email|project)\}\}/g

/**
 * The flow's template (the project's or the built-in one) with its
 * placeholders replaced in one pass, so a value that looks like a
 * placeholder stays as it is. Nothing else in a template is evaluated; the
 * subject loses line breaks a value might bring.
 */
export function renderMail (settings: OpenedEmailSettings, flow: EmailFlow, values: { link: string, email: string, project: string }, to: string): OutgoingMail {
  const template = settings.templates[flow] ?? BUILT_IN[flow]
  const fill = (text: string): string => text.replace(PLACEHOLDER, (_match, name: keyof typeof values) => values[name])
  return { to, subject: fill(template.subject).replace(/[\r\n]+/g, ' '), text: fill(template.text) }
}

/**
 * SMTP through nodemailer, to the addresses the one guard checked: the host
 * is resolved and checked at each send, the connection goes to the checked
 * address, and TLS still verifies the certificate against the host's name.
 */
export function smtpSender (guard: AddressGuard, timeoutMs: number): SendMail {
  return async (settings, mail) => {
    const { smtp } = settings
    const verdict = await guard.check(new URL(`smtp://${isIP(smtp.host) === 6 ? `[${smtp.host}]` : smtp.host}:${smtp.port}`))
    if (!verdict.ok) await checkSmtpHost(guard, smtp.host, smtp.port)
    const target = verdict.ok ? verdict.target : null
    const address = target?.addresses[0] ?? smtp.host
    const transport = createTransport({
      host: address,
      port: smtp.port,
      secure: smtp.security === 'tls',
      requireTLS: smtp.security === 'starttls',
      ignoreTLS: smtp.security === 'none',
      ...(smtp.user === undefined ? {} : { auth: { user: smtp.user, pass: smtp.password ?? '' } }),
      tls: isIP(smtp.host) === 0 ? { servername: smtp.host } : {},
      connectionTimeout: timeoutMs,
      greetingTimeout: timeoutMs,
      socketTimeout: timeoutMs
    })
    try {
      await transport.sendMail({ from: settings.sender, to: mail.to, subject: mail.subject, text: mail.text })
    } finally {
      transport.close()
    }
  }
}
