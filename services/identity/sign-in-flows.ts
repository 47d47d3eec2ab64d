import { createHash } from 'node:crypto'
import { identityErrors } from './errors.js'
import { generateToken, hashToken } from '../platform/crypto.js'
import type { Clock } from '../platform/clock.js'
import type { Store, StoreCollection } from '../store/types.js'

/**
 * A provider as a sign-in uses it: where to send the browser, and who came
 * back. An OpenID provider (oidc-client.ts) and GitHub's OAuth 2 (github-client.ts)
 * both answer it, so every caller gets PKCE, state and nonce the same way.
 */
export interface SignInClient {
  authorizationUrl (request: { state: string, nonce: string, codeVerifier: string }): Promise<string>
  /** The account's claims (`iss`, `sub`, `email`, `email_verified`, `name`) from the provider's answer to the callback. */
  identify (answer: { code: string, iss?: string }, flow: { codeVerifier: string, nonce: string }): Promise<Record<string, unknown>>
}

/** What a provider sends back, by query or by form post (Apple). */
export interface SignInCallbackParams { code?: string, state?: string, error?: string, iss?: string }

/** A sign-in under way: what start kept for the callback. `scope` is whose it is (a project's id, or the platform's ''). */
export type SignInFlow = {
  scope: string
  provider: string
  nonce: string
  codeVerifier: string
  /** SHA-256 of the cookie set on the browser that started the sign-in. */
  bindingHash: string
  /** The app's S256 challenge: the ticket this sign-in ends with is traded only with its verifier. */
  codeChallenge: string
  /** A validated landing URL; null means the caller's default. */
  redirectTo: string | null
  expiresAt: Date
}

type TicketRecord = { scope: string, userId: string, codeChallenge: string, expiresAt: Date }

/** Where to send the browser, and the cookie (`flow` names it, `binding` is its value) that binds the sign-in to it. */
export interface StartedSignIn { location: string, flow: string, binding: string }

const STATE_TTL_SECONDS = 600
const TICKET_TTL_SECONDS = 60

/**
 * Which flow a state belongs to, for the name of its browser cookie: one
 * cookie per flow, so a second sign-in started in another tab does not
 * overwrite the first one's. Derived from the state, so the callback finds
 * it; a prefix of its hash, so the cookie's name does not give the state away.
 */
export const signInFlowId = (state: string): string => hashToken(`flow:${state}`).slice(0, 16)

/** RFC 7636 S256. */
export const s256 = (verifier: string): string => createHash('sha256').update(verifier, 'ascii').digest('base64url')

/**
 * The one authorization-code sign-in: the platform's SSO and each project's
 * end-user sign-in are its two callers, each with its own collections. The
 * browser carries only an opaque state, stored hashed, single-use,
 * short-lived and bound to that browser by a cookie; the result is a one-time
 * ticket rather than tokens in the URL, traded only with the verifier of the
 * challenge the app started with, so a ticket carried to another client (a
 * link that would sign its victim into someone else's account) is worthless.
 */
export class SignInFlows {
  private readonly states: StoreCollection<SignInFlow>
  private readonly tickets: StoreCollection<TicketRecord>
  private lastSweep = 0

  constructor (private readonly store: Store, private readonly deps: {
    clock: Clock
    collections: { states: string, tickets: string }
  }) {
    this.states = store.collection<SignInFlow>(deps.collections.states)
    this.tickets = store.collection<TicketRecord>(deps.collections.tickets)
  }

  async init (): Promise<void> {
    await this.states.createIndex({ expiresAt: 1 })
    await this.tickets.createIndex({ expiresAt: 1 })
  }

  async begin (client: SignInClient, flow: { scope: string, provider: string, redirectTo: string | null, codeChallenge: string }): Promise<StartedSignIn> {
    const state = generateToken()
    const nonce = generateToken()
    const codeVerifier = generateToken()
    const binding = generateToken()
    const location = await client.authorizationUrl({ state, nonce, codeVerifier })
    await this.sweep()
    await this.states.insertOne({
      _id: hashToken(state),
      ...flow,
      nonce,
      codeVerifier,
      bindingHash: hashToken(binding),
      expiresAt: new Date(this.deps.clock.nowMs() + STATE_TTL_SECONDS * 1000)
    })
    return { location, flow: signInFlowId(state), binding }
  }

  /**
   * The flow a callback's state belongs to, consumed: deleting on read makes
   * it single-use even when two callbacks race. Unknown, used, expired, of
   * another provider or not this browser's: `identityErrors.ssoInvalidState`.
   */
  async resume (scope: string, provider: string, state: string | undefined, binding: string | undefined): Promise<SignInFlow> {
    if (state === undefined || state === '') throw identityErrors.ssoInvalidState()
    const record = await this.states.findOneAndDelete({ _id: hashToken(state), scope, provider })
    if (record === null || record.expiresAt.getTime() <= this.deps.clock.nowMs()) throw identityErrors.ssoInvalidState()
    if (binding === undefined || hashToken(binding) !== record.bindingHash) throw identityErrors.ssoInvalidState()
    return record
  }

  /** Who the provider says signed in, from its answer to the callback. */
  async identify (client: SignInClient, flow: SignInFlow, params: SignInCallbackParams): Promise<Record<string, unknown>> {
    if (params.error !== undefined) throw identityErrors.ssoProviderError({ error: params.error })
    if (params.code === undefined) throw identityErrors.ssoInvalidResponse({ why: 'The provider sent no authorization code' })
    return await client.identify({ code: params.code, ...(params.iss === undefined ? {} : { iss: params.iss }) }, flow)
  }

  async issueTicket (flow: SignInFlow, userId: string): Promise<string> {
    const ticket = generateToken()
    const expiresAt = new Date(this.deps.clock.nowMs() + TICKET_TTL_SECONDS * 1000)
    await this.tickets.insertOne({ _id: hashToken(ticket), scope: flow.scope, userId, codeChallenge: flow.codeChallenge, expiresAt })
    return ticket
  }

  /** The user a ticket was issued for, once, given its sign-in's verifier; a wrong verifier uses the ticket up. */
  async redeemTicket (scope: string, ticket: string, codeVerifier: string): Promise<string> {
    const record = await this.tickets.findOneAndDelete({ _id: hashToken(ticket), scope })
    if (record === null || record.expiresAt.getTime() <= this.deps.clock.nowMs()) throw identityErrors.invalidSsoTicket()
    if (s256(codeVerifier) !== record.codeChallenge) throw identityErrors.invalidSsoTicket()
    return record.userId
  }

  async forgetScope (scope: string): Promise<void> {
    // However many a scope holds: a page per write (a plain deleteMany refuses past its bound).
    for (const name of [this.deps.collections.tickets, this.deps.collections.states]) await this.store.extensions.sweep(name).deleteMany({ scope })
  }

  private async sweep (): Promise<void> {
    const now = this.deps.clock.nowMs()
    if (now - this.lastSweep < STATE_TTL_SECONDS * 1000) return
    this.lastSweep = now
    // However many a flood of started sign-ins left: a page per write.
    for (const name of [this.deps.collections.states, this.deps.collections.tickets]) {
      await this.store.extensions.sweep(name).deleteMany({ expiresAt: { $lt: new Date(now) } })
    }
  }
}
