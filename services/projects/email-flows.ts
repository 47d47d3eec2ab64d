import { projectErrors } from './errors.js'
import { checkEmail, normalizeEmail } from '../identity/users.js'
import { generateToken, hashToken } from '../platform/crypto.js'
import type { Clock } from '../platform/clock.js'
import type { PagedWrites, Store, StoreCollection } from '../store/types.js'
import type { EmailFlow } from '../../schemas/project-auth-email.js'
import type { ProjectAuth, ProjectSession } from './project-auth.js'
import type { ProjectUsers } from './project-users.js'
import type { EmailSettingsService } from './email-settings.js'
import { renderMail, type SendMail } from './email-sender.js'
import { sealedAt, type SealedValues } from '../platform/reseal.js'

/** A link's token as stored: only its hash, whose it is, which flow, the address it was mailed to, and until when. */
type StoredEmailToken = {
  projectId: string
  userId: string
  flow: EmailFlow
  /** The address the link went to: the account's, or for an email change the new one. */
  email: string
  /** For an email change: the account's address when it was asked for, which must still be its address. */
  previousEmail?: string
  expiresAt: Date
  /**
   * The token sealed with the master key (bound to this record), kept only
   * until the mail holding it is handed to the SMTP server, so a send queued
   * as a job survives a crash without a plain token ever being stored.
   */
  sealedToken?: string
}

const TOKENS = 'project_email_tokens'
/** The durable job that mails one link: its payload names the token record, never the token. */
export const PROJECT_EMAIL_SEND_JOB = 'project-email.send'
/** Deletes links past their expiry that nobody followed. */
export const PROJECT_EMAIL_TOKENS_PRUNE_JOB = 'project-email.prune-tokens'
export const PROJECT_EMAIL_TOKENS_PRUNE_EVERY_MS = 60 * 60 * 1000

const sealedFor = (tokenId: string): string => `project-email-token:${tokenId}`

/**
 * Tokens waiting to be mailed, sealed under the master key, for the re-seal
 * job: short-lived, but one left under a retired key when it is dropped would
 * never be sent.
 */
export const sealedEmailTokens: SealedValues = {
  collection: TOKENS,
  values: (doc) => sealedAt(doc, 'sealedToken', sealedFor(doc._id as string))
}

/**
 * End users' email flows: verification, password reset, email change
 * (confirmed on the new address) and magic-link sign-in. Each request mails
 * a link holding a random token, of which only the hash is stored (and,
 * until the mail is sent, the token sealed with the master key); the link
 * is single-use (consumed by a delete), short-lived, and the newest of its
 * flow for the user. A request answers the same whether or not the address
 * has an account: the mail goes out after the answer, through the durable
 * job queue, so neither the answer nor its timing waits on the SMTP server
 * and a crash loses no mail.
 */
export class EmailFlows {
  private readonly tokens: StoreCollection<StoredEmailToken>
  /** A project's links, and a flood's expired ones, go page by page: more than one write may remove. */
  private readonly sweep: PagedWrites
  /**
   * `idle` callers, woken each time a send settles here. Nothing is kept per
   * send: a send still waiting is a token record holding its sealed token,
   * and a set of the sends queued here would keep those another node ran.
   */
  private readonly waiters = new Set<() => void>()

  constructor (store: Store, private readonly deps: {
    clock: Clock
    users: ProjectUsers
    auth: ProjectAuth
    settings: EmailSettingsService
    send: SendMail
    /** Queues the durable send job of one token record (the job queue, retried with backoff). */
    enqueueSend: (payload: { projectId: string, tokenId: string }) => Promise<void>
    /** The master key's box: the token waiting to be mailed is kept sealed. */
    secrets: { seal: (plaintext: string, associatedData: string) => string, open: (sealed: string, associatedData: string) => string }
    projectName: (projectId: string) => Promise<string>
    linkTtlSeconds: number
    /** Called with a delivery that failed, which no request waits for. */
    onDeliveryFailure: (error: unknown, context: { projectId: string, flow: EmailFlow }) => void
  }) {
    this.tokens = store.collection<StoredEmailToken>(TOKENS)
    this.sweep = store.extensions.sweep(TOKENS)
  }

  async init (): Promise<void> {
    await this.tokens.createIndex({ projectId: 1, userId: 1, flow: 1 })
    await this.tokens.createIndex({ expiresAt: 1 })
  }

  /** Refuses a request while the project has auth off or no email settings: about the project, not the address. */
  async requireReady (projectId: string): Promise<void> {
    await this.deps.auth.requireAuthOn(projectId)
    if (await this.deps.settings.opened(projectId) === null) throw projectErrors.emailNotConfigured()
  }

  async requestVerification (projectId: string, emailInput: string): Promise<void> {
    await this.requireReady(projectId)
    const account = await this.deps.users.accountByEmail(projectId, emailInput)
    if (account === null || account.disabled || account.user.emailVerified) return
    await this.mailLink(projectId, 'verification', { userId: account.user.id, email: account.user.email })
  }

  async confirmVerification (projectId: string, token: string): Promise<void> {
    await this.deps.auth.requireAuthOn(projectId)
    const link = await this.consume(projectId, 'verification', token)
    if (!await this.deps.users.markVerified(projectId, link.userId, link.email)) throw projectErrors.emailLinkInvalid()
  }

  async requestPasswordReset (projectId: string, emailInput: string): Promise<void> {
    await this.requireReady(projectId)
    const account = await this.deps.users.accountByEmail(projectId, emailInput)
    if (account === null || account.disabled) return
    await this.mailLink(projectId, 'passwordReset', { userId: account.user.id, email: account.user.email })
  }

  /** The new password holds from now on, and every session the user held ends. */
  async confirmPasswordReset (projectId: string, token: string, newPassword: string): Promise<void> {
    await this.deps.auth.requireAuthOn(projectId)
    const link = await this.consume(projectId, 'passwordReset', token)
    if (!await this.deps.users.resetPassword(projectId, link.userId, link.email, newPassword)) throw projectErrors.emailLinkInvalid()
    await this.deps.auth.endSessions(projectId, [link.userId])
  }

  /** By the signed-in user: a link to the new address, which becomes theirs when it is followed. */
  async requestEmailChange (projectId: string, userId: string, newEmailInput: string): Promise<void> {
    await this.requireReady(projectId)
    const newEmail = normalizeEmail(newEmailInput)
    checkEmail(newEmail)
    const account = await this.deps.users.account(projectId, userId)
    if (account === null || account.user.email === newEmail) return
    // Taken: nothing is sent, and the answer is the same, so the request tells no one which addresses have accounts.
    if (await this.deps.users.accountByEmail(projectId, newEmail) !== null) return
    await this.mailLink(projectId, 'emailChange', { userId, email: newEmail, previousEmail: account.user.email })
  }

  async confirmEmailChange (projectId: string, token: string): Promise<string> {
    await this.deps.auth.requireAuthOn(projectId)
    const link = await this.consume(projectId, 'emailChange', token)
    if (link.previousEmail === undefined) throw projectErrors.emailLinkInvalid()
    if (!await this.deps.users.changeEmail(projectId, link.userId, link.previousEmail, link.email)) throw projectErrors.emailLinkInvalid()
    await this.deps.auth.endSessions(projectId, [link.userId])
    return link.email
  }

  async requestMagicLink (projectId: string, emailInput: string): Promise<void> {
    await this.requireReady(projectId)
    const account = await this.deps.users.accountByEmail(projectId, emailInput)
    if (account === null || account.disabled) return
    await this.mailLink(projectId, 'magicLink', { userId: account.user.id, email: account.user.email })
  }

  /** Following the link proves the address: it is marked verified, and a session starts. */
  async confirmMagicLink (projectId: string, token: string): Promise<ProjectSession> {
    await this.deps.auth.requireAuthOn(projectId)
    const link = await this.consume(projectId, 'magicLink', token)
    if (!await this.deps.users.markVerified(projectId, link.userId, link.email)) throw projectErrors.emailLinkInvalid()
    const account = await this.deps.users.account(projectId, link.userId)
    if (account === null) throw projectErrors.emailLinkInvalid()
    return await this.deps.auth.signInByLink(projectId, account)
  }

  /** Resolves once no live link waits to be mailed: each has been sent or has failed for good (tests). */
  async idle (): Promise<void> {
    for (;;) {
      let wake = (): void => {}
      const settled = new Promise<void>((resolve) => { wake = resolve })
      // Listening before counting: a send settling in between still wakes this loop.
      this.waiters.add(wake)
      try {
        const waiting = await this.tokens.countDocuments({ sealedToken: { $exists: true }, expiresAt: { $gt: new Date(this.deps.clock.nowMs()) } })
        if (waiting === 0) return
        await settled
      } finally {
        this.waiters.delete(wake)
      }
    }
  }

  async forgetProject (projectId: string): Promise<void> {
    await this.sweep.deleteMany({ projectId })
  }

  /** The periodic prune: links past their expiry that were never followed. */
  async pruneExpired (): Promise<{ pruned: number }> {
    return { pruned: await this.sweep.deleteMany({ expiresAt: { $lte: new Date(this.deps.clock.nowMs()) } }) }
  }

  private async mailLink (projectId: string, flow: EmailFlow, target: { userId: string, email: string, previousEmail?: string }): Promise<void> {
    if (await this.deps.settings.opened(projectId) === null) throw projectErrors.emailNotConfigured()
    const token = generateToken()
    const tokenId = hashToken(token)
    const now = this.deps.clock.nowMs()
    // Only the newest link of a flow works: asking again retires the one before.
    await this.tokens.deleteMany({ projectId, userId: target.userId, flow })
    await this.tokens.insertOne({
      _id: tokenId, projectId, flow, ...target, expiresAt: new Date(now + this.deps.linkTtlSeconds * 1000), sealedToken: this.deps.secrets.seal(token, sealedFor(tokenId))
    })
    await this.deps.enqueueSend({ projectId, tokenId })
  }

  /**
   * The send job: mails the link of a token record still waiting, then drops
   * the sealed token. Nothing is sent for a link already used, retired or
   * expired. A failed send throws, so the queue tries again later; after the
   * last attempt the sealed token is dropped, as nothing will mail it.
   */
  async deliver (payload: { projectId?: unknown, tokenId?: unknown }, attempt: { last: boolean } = { last: true }): Promise<{ sent: boolean }> {
    const { projectId, tokenId } = payload
    if (typeof projectId !== 'string' || typeof tokenId !== 'string') return { sent: false }
    try {
      const record = await this.tokens.findOne({ _id: tokenId, projectId })
      if (record === null || record.sealedToken === undefined || record.expiresAt.getTime() <= this.deps.clock.nowMs()) return { sent: false }
      const settings = await this.deps.settings.opened(projectId)
      if (settings === null) return { sent: false }
      const link = new URL(settings.linkBaseUrl)
      link.searchParams.set('flow', record.flow)
      link.searchParams.set('token', this.deps.secrets.open(record.sealedToken, sealedFor(tokenId)))
      const mail = renderMail(settings, record.flow, { link: link.href, email: record.email, project: await this.deps.projectName(projectId) }, record.email)
      try {
        await this.deps.send(settings, mail)
      } catch (error) {
        this.deps.onDeliveryFailure(error, { projectId, flow: record.flow })
        if (attempt.last) await this.tokens.updateOne({ _id: tokenId }, { $unset: { sealedToken: '' } })
        throw error
      }
      await this.tokens.updateOne({ _id: tokenId }, { $unset: { sealedToken: '' } })
      return { sent: true }
    } finally {
      for (const wake of this.waiters) wake()
    }
  }

  /** Takes the token out, so a second use finds nothing; refused when unknown, of another flow or project, or expired. */
  private async consume (projectId: string, flow: EmailFlow, token: string): Promise<StoredEmailToken> {
    const found = await this.tokens.findOneAndDelete({ _id: hashToken(token), projectId, flow })
    if (found === null || found.expiresAt.getTime() <= this.deps.clock.nowMs()) throw projectErrors.emailLinkInvalid()
    return found
  }
}
