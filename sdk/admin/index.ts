/**
 * @plinth/sdk/admin: the platform side (organizations, projects, end users, collection
 * definitions, service tokens, git, DNS, hosting, tracker, assistant), as thin typed
 * methods over the contract's paths. Every path is also reachable, typed, as
 * `admin.api.GET('/api/…', …)` (openapi-fetch); wrap its answer in `unwrap`.
 * Browser-safe; deploying from a folder and the file storage are in @plinth/sdk/node.
 */
import { callJson, createHttp, expectOk, unwrap, type Http, type HttpOptions } from '../core/http.js'
import type { BodyOf, DataOf, QueryOf } from '../core/paths.js'
import { signInFlow } from '../core/pkce.js'
import { followLogs, type LogLine } from './logs.js'
import { trackerMethods } from './tracker.js'
import { assistantMethods } from './assistant.js'
import { endUsers } from './end-users.js'
import { deployArchive, type ArchiveDeployOptions } from './deploy.js'
import { SessionKeeper, type Session } from '../client/session.js'
import { memoryStorage, type SessionStorage } from '../client/storage.js'
import type { components, operations } from '../generated/plinth.js'

export { PlinthError, SERVER_CODES } from '../core/errors.js'
export type { ErrorDetails, ErrorEnvelope } from '../core/errors.js'
export { createHttp, expectOk, retryingFetch, unwrap, type FetchClient, type Http, type HttpOptions, type RetryOptions } from '../core/http.js'
export type { BodyOf, DataOf, QueryOf } from '../core/paths.js'
export type { LogLine } from './logs.js'
export { packFiles, type ArchiveDeployOptions, type ArchiveDeployProgress, type Deployment, type PackedFile } from './deploy.js'
export type { AssistantRun, AssistantRunEvent } from './assistant.js'
export { isWorkItem, type TrackerWorkItem, type TrackerWorkItemTombstone } from './tracker.js'
export type { EndUserPage, EndUserQuery, ProjectUserAccount } from './end-users.js'
export type { Session } from '../client/session.js'
export { localStorageAdapter, memoryStorage, type SessionStorage } from '../client/storage.js'

export type PlatformUser = components['schemas']['PlatformUser']
export type PlatformSession = Session<PlatformUser>

export interface AdminOptions extends HttpOptions {
  /** A personal access token (PAT) or a platform JWT, used as given; `login` keeps a refreshed session instead. */
  token?: string
  /** Where `login` keeps the platform session: memoryStorage() by default; sessionStorage or localStorage through localStorageAdapter(). */
  storage?: SessionStorage
  /** The storage key. Default `plinth.admin.session`. */
  storageKey?: string
  /** Refresh this many seconds before the access token expires. Default 60. */
  refreshMarginSeconds?: number
}

/** A page of an app's log, as its JSON answer (not the event stream) gives it. */
export type LogPage = operations['getHostingAppBuildLogs']['responses'][200]['content']['application/json']['data']

type Login = DataOf<'/api/auth/login', 'post'>
type Refreshed = DataOf<'/api/auth/refresh', 'post'>

/** The platform answers `expiresIn`; the session keeps when that is, by this computer's clock. */
function issued (answer: Login | Refreshed) {
  return { ...answer, expiresAt: new Date(Date.now() + answer.expiresIn * 1000).toISOString() }
}

export class PlinthAdmin {
  /** A token given as is (a PAT, say); null while the kept session (after `login`) is used. */
  private token: string | null
  private readonly session: SessionKeeper<PlatformUser>
  /** Where the session is kept; an SSO sign-in's PKCE verifier waits here across the provider's round trip. */
  private readonly storage: SessionStorage
  private readonly storageKey: string
  readonly http: Http

  constructor (options: AdminOptions) {
    this.token = options.token ?? null
    const anonymous = createHttp({ baseUrl: options.baseUrl, fetch: options.fetch, retry: options.retry })
    const trade = async (refreshToken: string) => {
      const answer = await anonymous.api.POST('/api/auth/refresh', { body: { refreshToken } })
      return { ...answer, data: answer.data === undefined ? undefined : { data: issued(answer.data.data) } }
    }
    this.storage = options.storage ?? memoryStorage()
    this.storageKey = options.storageKey ?? 'plinth.admin.session'
    this.session = new SessionKeeper<PlatformUser>(trade, this.storage, this.storageKey, options.refreshMarginSeconds ?? 60)
    this.http = createHttp({
      baseUrl: options.baseUrl,
      fetch: options.fetch,
      retry: options.retry,
      token: async () => this.token ?? await this.session.token(),
      renew: async (sent) => this.token === null ? await this.session.renew(sent) : null
    })
  }

  /** The typed openapi-fetch client over every path, for what the methods below leave out. */
  get api (): Http['api'] {
    return this.http.api
  }

  /** Uses this token (a PAT or a platform JWT) as given from now on; null goes back to the kept session. */
  useToken (token: string | null): void {
    this.token = token
  }

  readonly auth = {
    register: async (body: BodyOf<'/api/auth/register', 'post'>) => await unwrap(this.api.POST('/api/auth/register', { body })),
    /**
     * Logs in and keeps the session in the storage given: later calls send its
     * access token, refreshed before it expires (once for any number of calls),
     * and again when the server refuses it as expired.
     */
    login: async (body: BodyOf<'/api/auth/login', 'post'>): Promise<PlatformSession> => {
      const answer = await unwrap(this.api.POST('/api/auth/login', { body }))
      this.token = null
      return await this.session.keep(issued(answer))
    },
    /** The single sign-on providers this server is configured for, each with the `startUrl` that begins its sign-in. */
    ssoProviders: async () => await unwrap(this.api.GET('/api/auth/oauth/providers')),
    /**
     * Where to send the browser to sign in with a provider: it lands back at
     * `redirectTo` (an origin the server allows; its own always) with
     * `?ticket=` for `exchangeSsoTicket`, or `?error=<code>`. A PKCE verifier
     * is made and kept in the storage (one per sign-in, named by a
     * `plinthFlow` parameter added to `redirectTo`), and its S256 challenge
     * sent, so a ticket read off the landing URL is useless to anyone else.
     */
    ssoStartUrl: async (provider: { startUrl: string }, redirectTo: string): Promise<string> => {
      const { landing, codeChallenge } = await signInFlow.start(this.storage, `${this.storageKey}.sso`, redirectTo)
      const url = new URL(provider.startUrl, `${this.http.baseUrl}/`)
      url.searchParams.set('redirectTo', landing)
      url.searchParams.set('codeChallenge', codeChallenge)
      return url.href
    },
    /**
     * Trades the ticket of the URL the browser landed on (`location.href`),
     * with the verifier `ssoStartUrl` kept for it, for a session kept as
     * `login`'s is. A landing with `?error=` throws that code.
     */
    exchangeSsoTicket: async (landedAt: string): Promise<PlatformSession> => {
      const body = await signInFlow.land(this.storage, `${this.storageKey}.sso`, landedAt, 'SDK_NO_SSO_SIGN_IN')
      const answer = await unwrap(this.api.POST('/api/auth/oauth/exchange', { body }))
      this.token = null
      return await this.session.keep(issued(answer))
    },
    /** Trades the kept session's refresh token for a new session now (calls do this by themselves when it is due). */
    refresh: async (): Promise<PlatformSession | null> => await this.session.refresh(),
    /** Ends the kept session on the server and forgets it here. */
    logout: async (): Promise<void> => {
      const session = await this.session.current()
      if (session === null) return
      try {
        await expectOk(this.api.POST('/api/auth/logout', { body: { refreshToken: session.refreshToken } }))
      } finally {
        await this.session.clear()
      }
    },
    /** The kept session, or null. */
    session: async (): Promise<PlatformSession | null> => await this.session.current(),
    onChange: (listener: (session: PlatformSession | null) => void): (() => void) => this.session.onChange(listener),
    me: async () => await unwrap(this.api.GET('/api/auth/me'))
  }

  /** Personal access tokens (`/api/auth/api-keys`): a PAT works where a platform JWT does, within its scopes. */
  readonly tokens = {
    list: async () => await unwrap(this.api.GET('/api/auth/api-keys')),
    create: async (body: BodyOf<'/api/auth/api-keys', 'post'>) => await unwrap(this.api.POST('/api/auth/api-keys', { body })),
    revoke: async (keyId: string) => { await expectOk(this.api.DELETE('/api/auth/api-keys/{keyId}', { params: { path: { keyId } } })) }
  }

  readonly organizations = {
    list: async () => await unwrap(this.api.GET('/api/organizations')),
    create: async (body: BodyOf<'/api/organizations', 'post'>) => await unwrap(this.api.POST('/api/organizations', { body })),
    get: async (orgId: string) => await unwrap(this.api.GET('/api/organizations/{orgId}', { params: { path: { orgId } } })),
    update: async (orgId: string, body: BodyOf<'/api/organizations/{orgId}', 'put'>) =>
      await unwrap(this.api.PUT('/api/organizations/{orgId}', { params: { path: { orgId } }, body })),
    delete: async (orgId: string) => { await expectOk(this.api.DELETE('/api/organizations/{orgId}', { params: { path: { orgId } } })) },
    members: async (orgId: string) => await unwrap(this.api.GET('/api/organizations/{orgId}/members', { params: { path: { orgId } } })),
    addMember: async (orgId: string, body: BodyOf<'/api/organizations/{orgId}/members', 'post'>) =>
      await unwrap(this.api.POST('/api/organizations/{orgId}/members', { params: { path: { orgId } }, body })),
    setMemberRole: async (orgId: string, memberId: string, role: BodyOf<'/api/organizations/{orgId}/members/{memberId}', 'put'>['role']) =>
      await unwrap(this.api.PUT('/api/organizations/{orgId}/members/{memberId}', { params: { path: { orgId, memberId } }, body: { role } })),
    /** Removes a member (or, with the caller's own id, leaves). */
    removeMember: async (orgId: string, memberId: string) => {
      await expectOk(this.api.DELETE('/api/organizations/{orgId}/members/{memberId}', { params: { path: { orgId, memberId } } }))
    },
    /** Who changed what in the organization, newest first (needs `audit.read`; docs/audit.md). */
    auditLog: async (orgId: string, query?: QueryOf<'/api/organizations/{orgId}/audit-log', 'get'>) =>
      await unwrap(this.api.GET('/api/organizations/{orgId}/audit-log', { params: { path: { orgId }, query } }))
  }

  /** Teams of an organization: members who share grants (docs/organizations.md). */
  readonly teams = memberSets(this, 'teams')
  /** Permission groups of an organization: the same shape as teams, for grants handed out as a bundle. */
  readonly permissionGroups = memberSets(this, 'permission-groups')

  /** The permission names grants, teams, groups and PAT scopes draw from, and what each role holds. */
  readonly permissions = {
    catalogue: async () => await unwrap(this.api.GET('/api/permissions'))
  }

  readonly projects = {
    list: async (query?: QueryOf<'/api/projects', 'get'>) => await unwrap(this.api.GET('/api/projects', { params: { query } })),
    create: async (body: BodyOf<'/api/projects', 'post'>) => await unwrap(this.api.POST('/api/projects', { body })),
    get: async (id: string) => await unwrap(this.api.GET('/api/projects/{id}', { params: { path: { id } } })),
    update: async (id: string, body: BodyOf<'/api/projects/{id}', 'put'>) => await unwrap(this.api.PUT('/api/projects/{id}', { params: { path: { id } }, body })),
    delete: async (id: string) => { await expectOk(this.api.DELETE('/api/projects/{id}', { params: { path: { id } } })) },
    /** Turns end-user auth (sign-up, login) on or off. */
    setAuth: async (projectId: string, enabled: boolean) =>
      await unwrap(this.api.POST('/api/projects/{projectId}/auth/toggle', { params: { path: { projectId } }, body: { enabled } })),
    /** The end users' email settings (SMTP, sender, links, templates), or null when none are set. */
    emailSettings: async (projectId: string) => {
      const answer = this.api.GET('/api/projects/{projectId}/auth/email', { params: { path: { projectId } } })
      // The route's one refusal of its own (openapi.yaml): 409 when the project sends no email yet.
      if ((await answer).response.status === 409) return null
      return await unwrap(answer)
    },
    setEmailSettings: async (projectId: string, body: BodyOf<'/api/projects/{projectId}/auth/email', 'put'>) =>
      await unwrap(this.api.PUT('/api/projects/{projectId}/auth/email', { params: { path: { projectId } }, body })),
    deleteEmailSettings: async (projectId: string) => { await expectOk(this.api.DELETE('/api/projects/{projectId}/auth/email', { params: { path: { projectId } } })) },
    /** End-user sign-in providers (OpenID Connect), never their secrets. */
    oauthProviders: async (projectId: string) => await unwrap(this.api.GET('/api/projects/{projectId}/auth/oauth-providers', { params: { path: { projectId } } })),
    /** Creates or replaces the provider `provider` (its id in the project). */
    setOauthProvider: async (projectId: string, provider: string, body: BodyOf<'/api/projects/{projectId}/auth/oauth-providers/{provider}', 'put'>) =>
      await unwrap(this.api.PUT('/api/projects/{projectId}/auth/oauth-providers/{provider}', { params: { path: { projectId, provider } }, body })),
    deleteOauthProvider: async (projectId: string, provider: string) => {
      await expectOk(this.api.DELETE('/api/projects/{projectId}/auth/oauth-providers/{provider}', { params: { path: { projectId, provider } } }))
    }
  }

  /** A project's end users: listed a page at a time (or iterated), read, disabled, deleted. */
  readonly endUsers = endUsers(this)

  /** Collection definitions: fields, indexes, the methods' rules. */
  readonly collections = {
    list: async (projectId: string) => await unwrap(this.api.GET('/api/projects/{projectId}/collections', { params: { path: { projectId } } })),
    create: async (projectId: string, body: BodyOf<'/api/projects/{projectId}/collections', 'post'>) =>
      await unwrap(this.api.POST('/api/projects/{projectId}/collections', { params: { path: { projectId } }, body })),
    get: async (projectId: string, name: string) =>
      await unwrap(this.api.GET('/api/projects/{projectId}/collections/{name}', { params: { path: { projectId, name } } })),
    update: async (projectId: string, name: string, body: BodyOf<'/api/projects/{projectId}/collections/{name}', 'put'>) =>
      await unwrap(this.api.PUT('/api/projects/{projectId}/collections/{name}', { params: { path: { projectId, name } }, body })),
    delete: async (projectId: string, name: string) => {
      await expectOk(this.api.DELETE('/api/projects/{projectId}/collections/{name}', { params: { path: { projectId, name } } }))
    },
    /** Who can see this? A method's rule tried as an end user or nobody, under the stored or draft `methods`; nothing is saved. */
    accessCheck: async (projectId: string, name: string, body: BodyOf<'/api/projects/{projectId}/collections/{name}/access-check', 'post'>) =>
      await unwrap(this.api.POST('/api/projects/{projectId}/collections/{name}/access-check', { params: { path: { projectId, name } }, body }))
  }

  /** Service tokens: a project's server-side credential; `verify` checks an end user's JWT with one. */
  readonly serviceTokens = {
    list: async (projectId: string) => await unwrap(this.api.GET('/api/projects/{projectId}/service-tokens', { params: { path: { projectId } } })),
    create: async (projectId: string, body: BodyOf<'/api/projects/{projectId}/service-tokens', 'post'>) =>
      await unwrap(this.api.POST('/api/projects/{projectId}/service-tokens', { params: { path: { projectId } }, body })),
    revoke: async (projectId: string, tokenId: string) => {
      await expectOk(this.api.DELETE('/api/projects/{projectId}/service-tokens/{tokenId}', { params: { path: { projectId, tokenId } } }))
    },
    /** Whether `token` is a live end-user JWT of the project, asked with the service token (not this client's token). */
    verify: async (projectId: string, serviceToken: string, token: string) =>
      await unwrap(this.api.POST('/api/p/{projectId}/auth/verify', {
        params: { path: { projectId } }, body: { token }, headers: { authorization: `Bearer ${serviceToken}` }
      }))
  }

  readonly git = {
    repositories: async (projectId: string) =>
      await unwrap(this.api.GET('/api/projects/{projectId}/git/repositories', { params: { path: { projectId } } })),
    createRepository: async (projectId: string, body: BodyOf<'/api/projects/{projectId}/git/repositories', 'post'>) =>
      await unwrap(this.api.POST('/api/projects/{projectId}/git/repositories', { params: { path: { projectId } }, body })),
    repository: async (projectId: string, repoSlug: string) =>
      await unwrap(this.api.GET('/api/projects/{projectId}/git/repositories/{repoSlug}', { params: { path: { projectId, repoSlug } } })),
    branches: async (projectId: string, repoSlug: string) =>
      await unwrap(this.api.GET('/api/projects/{projectId}/git/repositories/{repoSlug}/branches', { params: { path: { projectId, repoSlug } } })),
    /** A folder's entries at a ref (the default branch when omitted); the root without `path`. */
    tree: async (projectId: string, repoSlug: string, query?: QueryOf<'/api/projects/{projectId}/git/repositories/{repoSlug}/tree', 'get'>) =>
      await unwrap(this.api.GET('/api/projects/{projectId}/git/repositories/{repoSlug}/tree', { params: { path: { projectId, repoSlug }, query } })),
    /** A file's content at a ref (inline up to 1 MiB, base64 when binary). */
    blob: async (projectId: string, repoSlug: string, query: QueryOf<'/api/projects/{projectId}/git/repositories/{repoSlug}/blob', 'get'>) =>
      await unwrap(this.api.GET('/api/projects/{projectId}/git/repositories/{repoSlug}/blob', { params: { path: { projectId, repoSlug }, query } })),
    commits: async (projectId: string, repoSlug: string, query?: QueryOf<'/api/projects/{projectId}/git/repositories/{repoSlug}/commits', 'get'>) =>
      await unwrap(this.api.GET('/api/projects/{projectId}/git/repositories/{repoSlug}/commits', { params: { path: { projectId, repoSlug }, query } })),
    mergeRequests: async (projectId: string, repoSlug: string) =>
      await unwrap(this.api.GET('/api/projects/{projectId}/git/repositories/{repoSlug}/merge-requests', { params: { path: { projectId, repoSlug } } })),
    createMergeRequest: async (projectId: string, repoSlug: string, body: BodyOf<'/api/projects/{projectId}/git/repositories/{repoSlug}/merge-requests', 'post'>) =>
      await unwrap(this.api.POST('/api/projects/{projectId}/git/repositories/{repoSlug}/merge-requests', { params: { path: { projectId, repoSlug } }, body })),
    deleteRepository: async (projectId: string, repoSlug: string) => {
      await expectOk(this.api.DELETE('/api/projects/{projectId}/git/repositories/{repoSlug}', { params: { path: { projectId, repoSlug } } }))
    }
  }

  readonly dns = {
    zones: async (projectId: string) => await unwrap(this.api.GET('/api/projects/{projectId}/dns/zones', { params: { path: { projectId } } })),
    createZone: async (projectId: string, body: BodyOf<'/api/projects/{projectId}/dns/zones', 'post'>) =>
      await unwrap(this.api.POST('/api/projects/{projectId}/dns/zones', { params: { path: { projectId } }, body })),
    deleteZone: async (projectId: string, zoneId: string) => {
      await expectOk(this.api.DELETE('/api/projects/{projectId}/dns/zones/{zoneId}', { params: { path: { projectId, zoneId } } }))
    },
    records: async (projectId: string, query: QueryOf<'/api/projects/{projectId}/dns/records', 'get'>) =>
      await unwrap(this.api.GET('/api/projects/{projectId}/dns/records', { params: { path: { projectId }, query } })),
    createRecord: async (projectId: string, body: BodyOf<'/api/projects/{projectId}/dns/records', 'post'>) =>
      await unwrap(this.api.POST('/api/projects/{projectId}/dns/records', { params: { path: { projectId } }, body })),
    deleteRecord: async (projectId: string, recordId: string) => {
      await expectOk(this.api.DELETE('/api/projects/{projectId}/dns/records/{recordId}', { params: { path: { projectId, recordId } } }))
    }
  }

  /** Hosting's container apps (deploying a folder from disk is `deployFolder` in @plinth/sdk/node). */
  readonly hosting = {
    apps: async (projectId: string) => await unwrap(this.api.GET('/api/projects/{projectId}/backend/apps', { params: { path: { projectId } } })),
    createApp: async (projectId: string, body: BodyOf<'/api/projects/{projectId}/backend/apps', 'post'>) =>
      await unwrap(this.api.POST('/api/projects/{projectId}/backend/apps', { params: { path: { projectId } }, body })),
    app: async (projectId: string, appId: string) =>
      await unwrap(this.api.GET('/api/projects/{projectId}/backend/apps/{appId}', { params: { path: { projectId, appId } } })),
    deployments: async (projectId: string, appId: string) =>
      await unwrap(this.api.GET('/api/projects/{projectId}/backend/apps/{appId}/deployments', { params: { path: { projectId, appId } } })),
    deployment: async (projectId: string, appId: string, deploymentId: string) =>
      await unwrap(this.api.GET('/api/projects/{projectId}/backend/apps/{appId}/deployments/{deploymentId}', { params: { path: { projectId, appId, deploymentId } } })),
    /** Queues a deployment of an uploaded source archive (`uploadId`, from the source-upload session). */
    deploy: async (projectId: string, appId: string, body: BodyOf<'/api/projects/{projectId}/backend/apps/{appId}/deployments', 'post'>) =>
      await unwrap(this.api.POST('/api/projects/{projectId}/backend/apps/{appId}/deployments', { params: { path: { projectId, appId } }, body })),
    /** Uploads a source archive (`.tar.gz`, `.tgz`, `.tar`; `packFiles` makes one) with progress, then queues its deployment. */
    deployArchive: async (projectId: string, appId: string, archive: Blob, options?: ArchiveDeployOptions) =>
      await deployArchive(this.http, { projectId, appId }, archive, options),
    rollback: async (projectId: string, appId: string, deploymentId: string) =>
      await unwrap(this.api.POST('/api/projects/{projectId}/backend/apps/{appId}/deployments/{deploymentId}/rollback', { params: { path: { projectId, appId, deploymentId } } })),
    /** A page of an app's build or runtime log, oldest first (`after` a line's `seq` for the next). */
    logs: async (projectId: string, appId: string, kind: 'build' | 'runtime', query: { deploymentId?: string, after?: number, limit?: number } = {}) => {
      // A plain JSON read: the generated types mix this path's JSON answer with its event stream (`followLogs`).
      const search = new URLSearchParams()
      for (const [key, value] of Object.entries(query)) if (value !== undefined) search.set(key, String(value))
      const path = `/api/projects/${encodeURIComponent(projectId)}/backend/apps/${encodeURIComponent(appId)}/logs/${kind}`
      return await callJson<LogPage>(this.http, 'GET', search.size === 0 ? path : `${path}?${search.toString()}`)
    },
    /** The app's secrets: names, versions and whether builds get them; values are never returned. */
    secrets: async (projectId: string, appId: string) =>
      await unwrap(this.api.GET('/api/projects/{projectId}/backend/apps/{appId}/secrets', { params: { path: { projectId, appId } } })),
    setSecret: async (projectId: string, appId: string, name: string, body: BodyOf<'/api/projects/{projectId}/backend/apps/{appId}/secrets/{name}', 'put'>) =>
      await unwrap(this.api.PUT('/api/projects/{projectId}/backend/apps/{appId}/secrets/{name}', { params: { path: { projectId, appId, name } }, body })),
    deleteSecret: async (projectId: string, appId: string, name: string) => {
      await expectOk(this.api.DELETE('/api/projects/{projectId}/backend/apps/{appId}/secrets/{name}', { params: { path: { projectId, appId, name } } }))
    },
    /** Follows an app's build or runtime log (server-sent events) until `signal` aborts or the server ends it. */
    followLogs: (projectId: string, appId: string, kind: 'build' | 'runtime', options: { deploymentId?: string, signal?: AbortSignal } = {}): AsyncGenerator<LogLine> =>
      followLogs(this.http, { projectId, appId, kind, ...options })
  }

  /** The tracker: projects, states, labels, work items with the filter grammar, comments, activity (the rest through `api`). */
  readonly tracker = trackerMethods(this)

  /** The assistant: sessions, messages, runs followed as server-sent events, approvals. */
  readonly assistant = assistantMethods(this)
}

/**
 * Teams and permission groups are served by one route family (routes/organizations/member-sets.ts), so their
 * paths differ only in that segment and share every schema: the teams paths' types stand for both.
 */
function memberSets (admin: { readonly api: Http['api'] }, which: 'teams' | 'permission-groups') {
  const all = `/api/organizations/{orgId}/${which}` as '/api/organizations/{orgId}/teams'
  const one = `${all}/{setId}` as '/api/organizations/{orgId}/teams/{setId}'
  const member = `${one}/members/{memberId}` as '/api/organizations/{orgId}/teams/{setId}/members/{memberId}'
  return {
    list: async (orgId: string) => await unwrap(admin.api.GET(all, { params: { path: { orgId } } })),
    create: async (orgId: string, body: BodyOf<typeof all, 'post'>) => await unwrap(admin.api.POST(all, { params: { path: { orgId } }, body })),
    get: async (orgId: string, setId: string) => await unwrap(admin.api.GET(one, { params: { path: { orgId, setId } } })),
    /** Name, description, grants or members; each one given replaces what was there. */
    update: async (orgId: string, setId: string, body: BodyOf<typeof one, 'put'>) => await unwrap(admin.api.PUT(one, { params: { path: { orgId, setId } }, body })),
    delete: async (orgId: string, setId: string) => { await expectOk(admin.api.DELETE(one, { params: { path: { orgId, setId } } })) },
    addMember: async (orgId: string, setId: string, memberId: string) => await unwrap(admin.api.PUT(member, { params: { path: { orgId, setId, memberId } } })),
    removeMember: async (orgId: string, setId: string, memberId: string) => await unwrap(admin.api.DELETE(member, { params: { path: { orgId, setId, memberId } } }))
  }
}

export function createAdmin (options: AdminOptions): PlinthAdmin {
  return new PlinthAdmin(options)
}
