import { importPKCS8 } from 'jose'
import { commonErrors } from '../platform/errors.js'
import { projectErrors } from './errors.js'
import type { Clock } from '../platform/clock.js'
import type { SecretBox } from '../platform/crypto.js'
import type { AddressGuard } from '../outbound/internal-addresses.js'
import type { Store, StoreCollection } from '../store/types.js'
import type { OidcClientConfig, OidcEndpoints } from '../identity/oidc-client.js'
import { isoString } from '../platform/iso-dates.js'
import { retryUpsertRace } from '../platform/upsert-race.js'
import type { OauthProviderBodyT, OauthProviderT } from '../../schemas/project-oauth.js'
import { sealedAt, type SealedValues } from '../platform/reseal.js'

type TokenEndpointAuth = OidcClientConfig['tokenEndpointAuth']

type Preset = 'oidc' | 'github' | 'apple'

type StoredProvider = {
  projectId: string
  provider: string
  label: string
  /** Absent on providers saved before presets: `oidc`. */
  preset?: Preset
  issuer: string
  endpoints?: OidcEndpoints
  apiUrl?: string
  apple?: { teamId: string, keyId: string }
  clientId: string
  sealedClientSecret: string
  scopes: string[]
  tokenEndpointAuth: TokenEndpointAuth
  enabled: boolean
  updatedAt: Date
}

/** A provider as sign-in uses it: the secret opened; `apiUrl` is GitHub's. */
export interface OpenedProvider { id: string, enabled: boolean, preset: Preset, client: OidcClientConfig, apiUrl?: string }

const COLLECTION = 'project_oauth_providers'
const MAX_PROVIDERS = 20
const DEFAULT_SCOPES = ['openid', 'email', 'profile']
const GITHUB = 'https://github.com'
const APPLE = 'https://appleid.apple.com'

/** What each preset fixes or defaults; `oidc` leaves it all to the admin. */
const PRESETS = {
  oidc: { issuer: null, scopes: DEFAULT_SCOPES, required: ['openid'] },
  // user:email reads /user/emails, where GitHub says which address is verified.
  github: { issuer: GITHUB, scopes: ['read:user', 'user:email'], required: ['user:email'] },
  apple: { issuer: APPLE, scopes: ['openid', 'email', 'name'], required: ['openid', 'email'] }
} satisfies Record<Preset, { issuer: string | null, scopes: string[], required: string[] }>

const invalid = (path: string, message: string): Error => commonErrors.validationFailed({ fields: [{ path, message }] })
const keyOf = (projectId: string, provider: string): string => `${projectId}/${provider}`
/** The associated data a client secret is sealed under: moved to another project or provider, it does not open. */
const sealedFor = (projectId: string, provider: string): string => `project-oauth:${projectId}:${provider}`

/** Each provider's client secret, sealed under the master key, for the re-seal job. */
export const sealedOauthClientSecrets: SealedValues = {
  collection: COLLECTION,
  values: (doc) => sealedAt(doc, 'sealedClientSecret', sealedFor(doc.projectId as string, doc.provider as string))
}

/** An http(s) URL without credentials or fragment; the issuer also loses a trailing slash, as discovery compares it. */
function checkUrl (raw: string, path: string): URL {
  let url: URL | null = null
  try { url = new URL(raw) } catch {}
  if (url === null || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.username !== '' || url.password !== '' || url.hash !== '') {
    throw invalid(path, 'must be an http or https URL without credentials or fragment')
  }
  return url
}

/**
 * A project's OAuth/OIDC providers for its end users, set by its admins:
 * issuer (discovered) or explicit endpoints, client id, client secret sealed
 * under the master key, scopes, and a switch. Every URL passes the one
 * address guard when saved, and again at each call (the sign-in's fetch).
 */
export class OauthProviders {
  private readonly providers: StoreCollection<StoredProvider>
  private readonly changed: Array<(projectId: string, provider: string) => void> = []

  constructor (store: Store, private readonly deps: { clock: Clock, secrets: SecretBox, guard: AddressGuard, callbackUrl: (projectId: string, provider: string) => string }) {
    this.providers = store.collection<StoredProvider>(COLLECTION)
  }

  /** Called after a provider is set or removed here, so what was built from its old settings goes. */
  onChange (listener: (projectId: string, provider: string) => void): void {
    this.changed.push(listener)
  }

  async init (): Promise<void> {
    await this.providers.createIndex({ projectId: 1, provider: 1 })
  }

  async list (projectId: string): Promise<OauthProviderT[]> {
    const stored = await this.providers.find({ projectId }, { sort: { provider: 1 } }).toArray()
    return stored.map((provider) => this.view(provider))
  }

  async get (projectId: string, provider: string): Promise<OauthProviderT> {
    return this.view(await this.stored(projectId, provider))
  }

  /** Creates or replaces; the sealed secret stays when none is sent and the issuer, endpoints and client id are the same. */
  async put (projectId: string, provider: string, input: OauthProviderBodyT): Promise<OauthProviderT> {
    const preset = input.preset ?? 'oidc'
    const shape = PRESETS[preset]
    const rawIssuer = input.issuer ?? shape.issuer
    if (rawIssuer === null) throw invalid('body.issuer', 'is required for an OpenID provider')
    const issuer = checkUrl(rawIssuer, 'body.issuer').href.replace(/\/$/, '')
    if (preset === 'github' && input.endpoints !== undefined) throw invalid('body.endpoints', 'GitHub has no OpenID endpoints; give its web origin as issuer and apiUrl')
    if (preset !== 'github' && input.apiUrl !== undefined) throw invalid('body.apiUrl', 'is for GitHub only')
    if ((preset === 'apple') !== (input.apple !== undefined)) throw invalid('body.apple', preset === 'apple' ? 'is required for Apple: its team and key ids' : 'is for Apple only')
    if (preset === 'apple' && input.clientSecret !== undefined) await checkAppleKey(input.clientSecret)
    const endpoints = input.endpoints === undefined ? undefined : checkEndpoints(input.endpoints)
    const apiUrl = preset !== 'github'
      ? undefined
      : checkUrl(input.apiUrl ?? (issuer === GITHUB ? 'https://api.github.com' : `${issuer}/api/v3`), 'body.apiUrl').href.replace(/\/$/, '')
    await this.checkHost(issuer, 'body.issuer')
    for (const [name, url] of Object.entries(endpoints ?? {})) await this.checkHost(url, `body.endpoints.${name}`)
    if (apiUrl !== undefined) await this.checkHost(apiUrl, 'body.apiUrl')
    const previous = await this.providers.findOne({ _id: keyOf(projectId, provider) })
    if (previous === null && await this.providers.countDocuments({ projectId }) >= MAX_PROVIDERS) {
      throw invalid('params.provider', `a project has at most ${MAX_PROVIDERS} sign-in providers`)
    }
    // A kept secret must not be sent somewhere new: a changed token endpoint would receive it on the next sign-in.
    const sameClient = previous !== null && (previous.preset ?? 'oidc') === preset && previous.issuer === issuer && previous.clientId === input.clientId &&
      JSON.stringify([previous.endpoints ?? null, previous.apiUrl ?? null, previous.apple ?? null]) === JSON.stringify([endpoints ?? null, apiUrl ?? null, input.apple ?? null])
    const sealedClientSecret = input.clientSecret !== undefined
      ? this.deps.secrets.seal(input.clientSecret, sealedFor(projectId, provider))
      : sameClient ? previous.sealedClientSecret : null
    if (sealedClientSecret === null) throw invalid('body.clientSecret', 'is required for a new provider, or a new issuer, endpoints or client id')
    const scopes = [...new Set([...shape.required, ...(input.scopes ?? shape.scopes)])]
    const stored: StoredProvider = {
      projectId,
      provider,
      label: input.label ?? provider,
      preset,
      issuer,
      ...(endpoints === undefined ? {} : { endpoints }),
      ...(apiUrl === undefined ? {} : { apiUrl }),
      ...(input.apple === undefined ? {} : { apple: input.apple }),
      clientId: input.clientId,
      sealedClientSecret,
      scopes,
      // Apple authenticates clients only in the body.
      tokenEndpointAuth: preset === 'apple' ? 'client_secret_post' : input.tokenEndpointAuth ?? 'client_secret_basic',
      enabled: input.enabled ?? true,
      updatedAt: this.deps.clock.now()
    }
    const unset = Object.fromEntries((['endpoints', 'apiUrl', 'apple'] as const).filter((field) => stored[field] === undefined).map((field) => [field, '']))
    // Set whole in one write (a delete then insert left no provider between them): fields left out are unset, and
    // discovery is used again.
    await retryUpsertRace(() => this.providers.updateOne(
      { _id: keyOf(projectId, provider) },
      { $set: stored, ...(Object.keys(unset).length === 0 ? {} : { $unset: unset }) },
      { upsert: true }
    ))
    for (const listener of this.changed) listener(projectId, provider)
    return this.view(stored)
  }

  async remove (projectId: string, provider: string): Promise<void> {
    const removed = await this.providers.deleteOne({ _id: keyOf(projectId, provider) })
    if (removed.deletedCount === 0) throw projectErrors.oauthProviderNotFound({ provider })
    for (const listener of this.changed) listener(projectId, provider)
  }

  async forgetProject (projectId: string): Promise<void> {
    await this.providers.deleteMany({ projectId })
  }

  /** The enabled providers, for the sign-in buttons. */
  async enabled (projectId: string): Promise<Array<{ id: string, label: string }>> {
    const stored = await this.providers.find({ projectId, enabled: true }, { sort: { provider: 1 } }).toArray()
    return stored.map((provider) => ({ id: provider.provider, label: provider.label }))
  }

  /** For sign-in: 404 when the project has no such provider; a disabled one comes back with `enabled: false`. */
  async opened (projectId: string, provider: string): Promise<OpenedProvider> {
    const stored = await this.stored(projectId, provider)
    const preset = stored.preset ?? 'oidc'
    return {
      id: provider,
      enabled: stored.enabled,
      preset,
      ...(stored.apiUrl === undefined ? {} : { apiUrl: stored.apiUrl }),
      client: {
        label: stored.label,
        responseMode: preset === 'apple' ? 'form_post' : 'query',
        ...(stored.apple === undefined ? {} : { signedClientSecret: stored.apple }),
        clientId: stored.clientId,
        clientSecret: this.deps.secrets.open(stored.sealedClientSecret, sealedFor(projectId, provider)),
        issuer: stored.issuer,
        ...(stored.endpoints === undefined ? {} : { endpoints: stored.endpoints }),
        scope: stored.scopes.join(' '),
        tokenEndpointAuth: stored.tokenEndpointAuth
      }
    }
  }

  private async stored (projectId: string, provider: string): Promise<StoredProvider> {
    const stored = await this.providers.findOne({ _id: keyOf(projectId, provider) })
    if (stored === null) throw projectErrors.oauthProviderNotFound({ provider })
    return stored
  }

  private async checkHost (url: string, path: string): Promise<void> {
    const verdict = await this.deps.guard.check(url)
    if (verdict.ok) return
    const host = new URL(url).hostname
    throw projectErrors.oauthHostRefused({
      path,
      why: verdict.unresolved ? `The host ${host} does not resolve` : `The host ${host} is at ${verdict.address}, a ${verdict.kind} address this server does not call`
    })
  }

  private view (stored: StoredProvider): OauthProviderT {
    return {
      id: stored.provider,
      label: stored.label,
      preset: stored.preset ?? 'oidc',
      issuer: stored.issuer,
      ...(stored.endpoints === undefined ? {} : { endpoints: stored.endpoints }),
      ...(stored.apiUrl === undefined ? {} : { apiUrl: stored.apiUrl }),
      ...(stored.apple === undefined ? {} : { apple: stored.apple }),
      clientId: stored.clientId,
      hasClientSecret: true,
      scopes: stored.scopes,
      tokenEndpointAuth: stored.tokenEndpointAuth,
      enabled: stored.enabled,
      callbackUrl: this.deps.callbackUrl(stored.projectId, stored.provider),
      updatedAt: isoString(stored.updatedAt)
    }
  }
}

/** Apple's key file: a PKCS#8 PEM of a P-256 key, refused when saved rather than at the first sign-in. */
async function checkAppleKey (pem: string): Promise<void> {
  try {
    await importPKCS8(pem, 'ES256')
  } catch {
    throw invalid('body.clientSecret', 'must be the PEM (PKCS#8) of the Sign in with Apple key\'s ES256 private key')
  }
}

function checkEndpoints (input: OidcEndpoints): OidcEndpoints {
  const endpoints: OidcEndpoints = {
    authorization: checkUrl(input.authorization, 'body.endpoints.authorization').href,
    token: checkUrl(input.token, 'body.endpoints.token').href,
    jwks: checkUrl(input.jwks, 'body.endpoints.jwks').href
  }
  if (input.userinfo !== undefined) endpoints.userinfo = checkUrl(input.userinfo, 'body.endpoints.userinfo').href
  return endpoints
}
