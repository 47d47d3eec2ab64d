import { commonErrors } from '../platform/errors.js'
import { projectErrors } from './errors.js'
import type { Clock } from '../platform/clock.js'
import type { SecretBox } from '../platform/crypto.js'
import type { AddressGuard } from '../outbound/internal-addresses.js'
import type { Store, StoreCollection } from '../store/types.js'
import { checkEmail, normalizeEmail } from '../identity/users.js'
import { isoString } from '../platform/iso-dates.js'
import type { EmailSettingsBodyT, EmailSettingsT, EmailTemplateT } from '../../schemas/project-auth-email.js'
import { sealedAt, type SealedValues } from '../platform/reseal.js'

type SmtpSecurity = 'tls' | 'starttls' | 'none'

type StoredSettings = {
  smtp: { host: string, port: number, security: SmtpSecurity, user?: string, sealedPassword?: string }
  sender: string
  linkBaseUrl: string
  requireVerifiedEmail: boolean
  templates: Partial<Record<string, EmailTemplateT>>
  updatedAt: Date
}

/** What sending needs: the settings with the SMTP password opened. */
export interface OpenedEmailSettings {
  smtp: { host: string, port: number, security: SmtpSecurity, user?: string, password?: string }
  sender: string
  linkBaseUrl: string
  templates: Partial<Record<string, EmailTemplateT>>
}

const COLLECTION = 'project_email_settings'
// `Name <address>` or a bare address; the name may not hold what would end the header or open another address.
const SENDER = /^(?:([^<>\r\n"]{0,200}|"[^"\r\n]{0,200}")\s*<([^<>\s]+)>|([^<>\s]+))$/

const invalid = (path: string, message: string): Error => commonErrors.validationFailed({ fields: [{ path, message }] })

/** The associated data a project's SMTP password is sealed under: a sealed value moved to another project does not open. */
const sealedFor = (projectId: string): string => `project-email:${projectId}`

/** Each project's SMTP password, sealed under the master key, for the re-seal job. */
export const sealedSmtpPasswords: SealedValues = {
  collection: COLLECTION,
  values: (doc) => sealedAt(doc, 'smtp.sealedPassword', sealedFor(doc._id as string))
}

export async function checkSmtpHost (guard: AddressGuard, host: string, port: number): Promise<void> {
  let url: URL
  try { url = new URL(`smtp://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`) } catch { throw invalid('body.smtp.host', 'is not a host name or address') }
  const verdict = await guard.check(url)
  if (verdict.ok) return
  throw projectErrors.smtpHostRefused({
    why: verdict.unresolved ? `The SMTP host ${host} does not resolve` : `The SMTP host ${host} is at ${verdict.address}, a ${verdict.kind} address this server does not send to`
  })
}

/**
 * A project's email settings: its SMTP server (password sealed under the
 * master key), sender, link base, templates and whether sign-in waits for a
 * verified address. One document per project.
 */
export class EmailSettingsService {
  private readonly settings: StoreCollection<StoredSettings>

  constructor (store: Store, private readonly deps: { clock: Clock, secrets: SecretBox, guard: AddressGuard }) {
    this.settings = store.collection<StoredSettings>(COLLECTION)
  }

  async get (projectId: string): Promise<EmailSettingsT> {
    const stored = await this.settings.findOne({ _id: projectId })
    if (stored === null) throw projectErrors.emailNotConfigured()
    return view(stored)
  }

  /** Replaces the settings; the stored password stays when none is sent and the server is the same. */
  async put (projectId: string, input: EmailSettingsBodyT): Promise<EmailSettingsT> {
    const host = input.smtp.host.trim().toLowerCase().replace(/\.$/, '')
    await checkSmtpHost(this.deps.guard, host, input.smtp.port)
    const sender = checkSender(input.sender)
    checkLinkBase(input.linkBaseUrl)
    for (const [flow, template] of Object.entries(input.templates ?? {})) {
      if (template !== undefined && !template.text.includes('{{link}}')) throw invalid(`body.templates.${flow}.text`, 'must contain {{link}}')
    }
    const previous = await this.settings.findOne({ _id: projectId })
    const sameServer = previous !== null && previous.smtp.host === host && previous.smtp.user === input.smtp.user
    const sealedPassword = input.smtp.password !== undefined
      ? this.deps.secrets.seal(input.smtp.password, sealedFor(projectId))
      : sameServer ? previous.smtp.sealedPassword : undefined
    const stored: StoredSettings = {
      smtp: {
        host,
        port: input.smtp.port,
        security: input.smtp.security,
        ...(input.smtp.user === undefined ? {} : { user: input.smtp.user }),
        ...(sealedPassword === undefined ? {} : { sealedPassword })
      },
      sender,
      linkBaseUrl: input.linkBaseUrl,
      requireVerifiedEmail: input.requireVerifiedEmail ?? false,
      templates: input.templates ?? {},
      updatedAt: this.deps.clock.now()
    }
    // `smtp` and `templates` are set whole, so a user, password or template left out is gone.
    await this.settings.updateOne({ _id: projectId }, { $set: stored }, { upsert: true })
    return view(stored)
  }

  async remove (projectId: string): Promise<void> {
    await this.settings.deleteOne({ _id: projectId })
  }

  /** For sending: null when the project has no settings. */
  async opened (projectId: string): Promise<OpenedEmailSettings | null> {
    const stored = await this.settings.findOne({ _id: projectId })
    if (stored === null) return null
    const { sealedPassword, ...smtp } = stored.smtp
    return {
      smtp: { ...smtp, ...(sealedPassword === undefined ? {} : { password: this.deps.secrets.open(sealedPassword, sealedFor(projectId)) }) },
      sender: stored.sender,
      linkBaseUrl: stored.linkBaseUrl,
      templates: stored.templates
    }
  }

  async requiresVerifiedEmail (projectId: string): Promise<boolean> {
    return (await this.settings.findOne({ _id: projectId }))?.requireVerifiedEmail === true
  }
}

function view (stored: StoredSettings): EmailSettingsT {
  const { sealedPassword, ...smtp } = stored.smtp
  return {
    smtp: { ...smtp, hasPassword: sealedPassword !== undefined },
    sender: stored.sender,
    linkBaseUrl: stored.linkBaseUrl,
    requireVerifiedEmail: stored.requireVerifiedEmail,
    templates: stored.templates,
    updatedAt: isoString(stored.updatedAt)
  }
}

function checkSender (raw: string): string {
  const sender = raw.trim()
  const match = SENDER.exec(sender)
  const address = match === null ? null : normalizeEmail(match[2] ?? match[3])
  try { if (address !== null) checkEmail(address) } catch { throw invalid('body.sender', 'is not an address or `Name <address>`') }
  if (address === null) throw invalid('body.sender', 'is not an address or `Name <address>`')
  return sender
}

function checkLinkBase (raw: string): void {
  let url: URL | null = null
  try { url = new URL(raw) } catch {}
  if (url === null || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.username !== '' || url.password !== '' || url.hash !== '') {
    throw invalid('body.linkBaseUrl', 'must be an http or https URL without credentials or fragment')
  }
}
