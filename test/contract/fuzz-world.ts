import { execFileSync } from 'node:child_process'
import { createHmac, generateKeyPairSync } from 'node:crypto'
import type { TestApp } from '../helper.js'
import { COLLECTION_METHODS } from '../../schemas/collections.js'
import { ensureTracker, TRACKER_FIXTURES, type FixtureCalls } from './fuzz-tracker.js'

/**
 * The fixtures the fuzz test aims its requests at, made through the API as a
 * client would make them: a platform owner (JWT, refresh token, PATs, an SSH
 * key), an organization with a second member, a team and a group, a project
 * with end-user auth on, a service token and an end user, a second project
 * for cross-project tokens, and collections holding records, a file and an
 * open upload session.
 *
 * Fuzzed requests delete and change these, so after every successful write
 * `repair()` checks them and remakes what is gone; arbitraries refer to them
 * by name (see `ref` in schema-arbitraries.ts) and `value(name)` gives
 * whatever the name stands for now.
 */

const PASSWORD = 'correct horse battery'
export const THINGS = 'things'
export const TAGS = 'tags'

const everyMethod = (rule: Record<string, unknown> | null) => Object.fromEntries(COLLECTION_METHODS.map((method) => [method, { enabled: true, rule }]))

/** Owner-only records: the rule machinery (owner, filter with @request.auth.id) in the path of every data request. */
export const TAGS_DEFINITION = {
  fields: [{ name: 'label', type: 'text', max: 100 }, { name: 'author', type: 'text' }],
  indexes: [],
  methods: everyMethod({ requireAuth: true, owner: 'author', filter: { author: '@request.auth.id' } })
}

/** End users open to platform admins, and to each end user for their own record: the password hash's guards in the path. */
export const USERS = '_users'
const USERS_METHODS = {
  ...everyMethod(null),
  get: { enabled: true, rule: { requireAuth: true, filter: { id: '@request.auth.id' } } },
  update: { enabled: true, rule: { requireAuth: true, filter: { id: '@request.auth.id' }, readonly: ['email', 'emailVerified'] } }
}

/** A field of every type, and every method public. */
export const THINGS_DEFINITION = {
  fields: [
    { name: 'title', type: 'text', max: 200 },
    { name: 'count', type: 'number', min: -1000, max: 1000 },
    { name: 'flag', type: 'boolean' },
    { name: 'when', type: 'date' },
    { name: 'meta', type: 'json' },
    { name: 'contact', type: 'email' },
    { name: 'site', type: 'url' },
    { name: 'status', type: 'select', values: ['draft', 'live', 'gone'] },
    { name: 'labels', type: 'select', values: ['x', 'y', 'z'], multiple: true },
    { name: 'tag', type: 'relation', collection: TAGS },
    { name: 'doc', type: 'file', maxSize: 1024 * 1024 },
    { name: 'gallery', type: 'file', multiple: true, max: 3 }
  ],
  indexes: [{ fields: ['status', '-when'] }],
  methods: everyMethod({ requireAuth: false })
}

/** The first bytes of a PNG: enough for the sniffer, small enough for every field. */
export const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(64, 7)])
export const SESSION_SIZE = 10

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

function sshPublicKey (): string {
  const jwk = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' })
  const wire = (data: Buffer): Buffer => {
    const length = Buffer.alloc(4)
    length.writeUInt32BE(data.length)
    return Buffer.concat([length, data])
  }
  const blob = Buffer.concat([wire(Buffer.from('ssh-ed25519')), wire(Buffer.from(jwk.x as string, 'base64url'))])
  return `ssh-ed25519 ${blob.toString('base64')} fuzz@plinth`
}

export function multipart (name: string, type: string, data: Buffer, boundary = 'plinthfuzzboundary') {
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    payload: Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: ${type}\r\n\r\n`),
      data,
      Buffer.from(`\r\n--${boundary}--\r\n`)
    ])
  }
}

/** A JWT with the claims given, signed with the key given: expired tokens with the server's real keys. */
function signJwt (claims: Record<string, unknown>, key: Buffer): string {
  const encode = (part: object) => Buffer.from(JSON.stringify(part)).toString('base64url')
  const body = `${encode({ alg: 'HS256', typ: 'JWT' })}.${encode(claims)}`
  return `${body}.${createHmac('sha256', key).update(body).digest('base64url')}`
}

/** A fixture request the server failed: a finding in itself, never something to rebuild around. */
export class FixtureServerError extends Error {}

/** What ensureGit makes: the repository, its first commit, a deploy key, branch and tag rules, a label and a merge request. */
const GIT_FIXTURES = ['repoSlug', 'commitSha', 'deployKeyId', 'ruleId', 'tagRuleId', 'labelId', 'iid', 'commentId', 'reviewId']

export class FuzzWorld {
  private readonly values = new Map<string, string>()
  private readonly lazy = new Map<string, () => Promise<string>>()
  private serial = 0
  /** The updatedAt of each collection as this class last defined it: another value means a fuzzed request redefined it. */
  private readonly stamps = new Map<string, string>()
  /** `_users` keeps the fields auth gave it; ours is one more. */
  private usersDefinition: object = {}
  private readonly sshKey = sshPublicKey()
  private recordIds: string[] = []
  /** Fixtures remade after fuzzed requests destroyed them, by name. */
  readonly rebuilt = new Map<string, number>()
  /**
   * Families whose fixtures are made when an operation first names one of them, and kept (repaired) from then on:
   * a shard that never names a repository never makes one, nor checks it after each write (git's checks spawn git).
   * `reset` forgets what a rebuilt project no longer holds.
   */
  private readonly families = {
    git: { built: false, fixtures: GIT_FIXTURES, reset: () => { this.forget(GIT_FIXTURES) }, ensure: async () => { await this.ensureGit() } },
    dns: { built: false, fixtures: ['zoneId', 'dnsRecordId'], reset: () => { this.forget(['zoneId', 'dnsRecordId']) }, ensure: async () => { await this.ensureDns() } },
    hosting: { built: false, fixtures: ['hostingAppId', 'staticAppId'], reset: () => { this.forget(['hostingAppId', 'staticAppId']) }, ensure: async () => { await this.ensureHosting() } },
    tracker: { built: false, fixtures: TRACKER_FIXTURES, reset: () => { this.forget(['lpId']) }, ensure: async () => { await ensureTracker(this.trackerCalls()) } }
  }

  private constructor (private readonly app: TestApp) {
    this.values.set('sshKey', this.sshKey)
    this.lazy.set('newSshKey', async () => sshPublicKey())
    this.lazy.set('ssoState', async () => {
      const started = await app.inject({ url: `/api/auth/oauth/google/start?codeChallenge=${'A'.repeat(43)}` })
      const state = new URL(String(started.headers.location)).searchParams.get('state')
      if (state === null) throw new Error(`fixture: SSO start gave no state: ${String(started.headers.location)}`)
      return state
    })
  }

  static async create (app: TestApp): Promise<FuzzWorld> {
    const world = new FuzzWorld(app)
    await world.buildPlatform()
    await world.buildOrganization()
    return world
  }

  async value (name: string): Promise<string> {
    for (const family of Object.values(this.families)) {
      if (family.built || !family.fixtures.includes(name)) continue
      family.built = true
      await family.ensure()
    }
    const lazy = this.lazy.get(name)
    if (lazy !== undefined) return await lazy()
    const value = this.values.get(name)
    if (value === undefined) throw new Error(`no fixture named ${name}`)
    return value
  }

  private trackerCalls (): FixtureCalls {
    return {
      app: this.app,
      must: async (method, url, token, payload) => await this.must(method, url, token, payload),
      status: async (url, token) => await this.status(url, token),
      get: (name) => this.get(name),
      has: (name) => this.values.has(name),
      set: (entries) => { this.set(entries) },
      forget: (names) => { this.forget(names) },
      rebuilding: (what) => { this.rebuilding(what) },
      serial: () => ++this.serial
    }
  }

  private get (name: string): string {
    const value = this.values.get(name)
    if (value === undefined) throw new Error(`no fixture named ${name}`)
    return value
  }

  private set (entries: Record<string, string>): void {
    for (const [name, value] of Object.entries(entries)) this.values.set(name, value)
  }

  private forget (names: readonly string[]): void {
    for (const name of names) this.values.delete(name)
  }

  /** The lazily made families an operation has named so far, in the order they are made. */
  private async ensureBuiltFamilies (): Promise<void> {
    for (const family of Object.values(this.families)) if (family.built) await family.ensure()
  }

  private rebuilding (what: string): void {
    this.rebuilt.set(what, (this.rebuilt.get(what) ?? 0) + 1)
  }

  /** A fixture request that must succeed; its `data`. */
  private async must (method: Method, url: string, token: string | null, payload?: unknown): Promise<any> {
    const res = await this.app.inject({ method, url, headers: token === null ? {} : { authorization: `Bearer ${token}` }, ...(payload === undefined ? {} : { payload: payload as object }) })
    if (res.statusCode >= 500) throw new FixtureServerError(`fixture ${method} ${url}: ${res.statusCode} ${res.body}`)
    if (res.statusCode >= 300) throw new Error(`fixture ${method} ${url}: ${res.statusCode} ${res.body}`)
    return res.json().data
  }

  private async status (url: string, token: string): Promise<{ status: number, data: any }> {
    const res = await this.app.inject({ url, headers: { authorization: `Bearer ${token}` } })
    if (res.statusCode >= 500) throw new FixtureServerError(`fixture GET ${url}: ${res.statusCode} ${res.body}`)
    return { status: res.statusCode, data: res.statusCode === 200 ? res.json().data : undefined }
  }

  private async buildPlatform (): Promise<void> {
    const platformKey = this.app.deriveSecretKey('jwt:platform')
    for (const [who, email] of [['owner', 'owner@fuzz.test'], ['member', 'member@fuzz.test']]) {
      await this.must('POST', '/api/auth/register', null, { email, password: PASSWORD, name: who })
      const session = await this.must('POST', '/api/auth/login', null, { email, password: PASSWORD })
      this.set({ [`${who}Id`]: session.user.id, [`${who}Email`]: email, [`${who}Jwt`]: session.accessToken, [`${who}RefreshToken`]: session.refreshToken })
    }
    const now = Math.floor(Date.now() / 1000)
    this.set({
      password: PASSWORD,
      platformJwt: this.get('ownerJwt'),
      refreshToken: this.get('ownerRefreshToken'),
      expiredPlatformJwt: signJwt({ sub: this.get('ownerId'), sid: 'gone', type: 'platform', aud: 'plinth:platform', iss: this.app.config.publicUrl, iat: now - 7200, exp: now - 3600 }, platformKey)
    })
    await this.ensurePats()
    const key = await this.must('POST', '/api/auth/ssh-keys', this.get('platformJwt'), { title: 'fuzz', key: this.sshKey })
    this.set({ sshKeyId: key.id })
  }

  private async ensurePats (): Promise<void> {
    const jwt = this.get('platformJwt')
    for (const [name, scopes] of [['pat', undefined], ['scopedPat', ['records.read', 'org.read']]] as const) {
      const current = this.values.get(name)
      if (current !== undefined && (await this.status('/api/auth/me', current)).status === 200) continue
      if (current !== undefined) this.rebuilding(name)
      const key = await this.must('POST', '/api/auth/api-keys', jwt, { name, ...(scopes === undefined ? {} : { scopes }) })
      this.set({ [name]: key.token, [`${name}KeyId`]: key.id })
    }
  }

  private async buildOrganization (): Promise<void> {
    const jwt = this.get('platformJwt')
    const org = await this.must('POST', '/api/organizations', jwt, { name: `Fuzz ${++this.serial}` })
    await this.must('POST', `/api/organizations/${org.id as string}/members`, jwt, { userId: this.get('memberId'), role: 'member' })
    this.set({ orgId: org.id })
    this.values.delete('teamId')
    this.values.delete('groupId')
    await this.ensureMemberSets()
    this.values.delete('orgLlmCredentialId')
    await this.buildProject('')
    await this.buildProject('other')
  }

  private async ensureMemberSets (): Promise<void> {
    const jwt = this.get('platformJwt')
    const org = `/api/organizations/${this.get('orgId')}`
    for (const [name, path] of [['teamId', 'teams'], ['groupId', 'permission-groups']]) {
      const current = this.values.get(name)
      if (current !== undefined && (await this.status(`${org}/${path}/${current}`, jwt)).status === 200) continue
      if (current !== undefined) this.rebuilding(name)
      const set = await this.must('POST', `${org}/${path}`, jwt, { name: `${path} ${++this.serial}`, members: [this.get('memberId')], permissions: [{ permission: 'records.read' }] })
      this.set({ [name]: set.id })
    }
  }

  /** `prefix` '' is the main project, 'other' the one whose tokens must not work on it. */
  private async buildProject (prefix: '' | 'other'): Promise<void> {
    const jwt = this.get('platformJwt')
    const name = (key: string): string => prefix === '' ? key : `${prefix}${key[0].toUpperCase()}${key.slice(1)}`
    const project = await this.must('POST', '/api/projects', jwt, { orgId: this.get('orgId'), name: `Fuzz ${++this.serial}` })
    this.set({ [name('projectId')]: project.id })
    for (const stale of ['serviceTokenId', 'projectJwt']) this.values.delete(name(stale))
    await this.must('POST', `/api/projects/${project.id as string}/auth/toggle`, jwt, { enabled: true })
    await this.ensureProjectCredentials(prefix)
    if (prefix === '') {
      await this.buildData()
      for (const family of Object.values(this.families)) if (family.built) family.reset()
      await this.ensureBuiltFamilies()
    }
    if (prefix === '') await this.ensureLlm()
    if (prefix === '') await this.ensureRecordWebhook()
    if (prefix === '') await this.ensureVariable()
  }

  /**
   * An LLM credential in the organization and one in the project, at a host that never resolves (`.invalid`), so a
   * fuzzed check fails at once without leaving the machine.
   */
  private async ensureLlm (): Promise<void> {
    const jwt = this.get('platformJwt')
    const levels = [['orgLlmCredentialId', `/api/organizations/${this.get('orgId')}`], ['projectLlmCredentialId', `/api/projects/${this.get('projectId')}`]]
    for (const [key, base] of levels) {
      const id = this.values.get(key)
      if (id !== undefined && (await this.status(`${base}/llm-credentials/${id}`, jwt)).status === 200) continue
      if (id !== undefined) this.rebuilding(key)
      const body = { name: `fuzz-${++this.serial}`, provider: 'openai-compatible', baseUrl: 'http://llm.invalid/v1', apiKey: 'sk-fuzz-0000000000000000' }
      this.set({ [key]: (await this.must('POST', `${base}/llm-credentials`, jwt, body)).id })
    }
  }

  /** A record webhook on the things collection, at a host that never resolves, so no delivery leaves the machine. */
  private async ensureRecordWebhook (): Promise<void> {
    const jwt = this.get('platformJwt')
    const base = `/api/projects/${this.get('projectId')}/auxiliary/webhooks`
    const id = this.values.get('recordWebhookId')
    if (id !== undefined && (await this.status(`${base}/${id}`, jwt)).status === 200) return
    if (id !== undefined) this.rebuilding('record webhook')
    const body = { url: 'http://hooks.invalid/hook', events: ['*'], filter: { collections: [THINGS] } }
    this.set({ recordWebhookId: (await this.must('POST', base, jwt, body)).webhook.id })
  }

  /** A secret project variable; remade under a fresh key when a fuzzed request deleted it. */
  private async ensureVariable (): Promise<void> {
    const jwt = this.get('platformJwt')
    const base = `/api/projects/${this.get('projectId')}/auxiliary/variables`
    const id = this.values.get('variableId')
    if (id !== undefined && (await this.status(`${base}/${id}`, jwt)).status === 200) return
    if (id !== undefined) this.rebuilding('variable')
    this.set({ variableId: (await this.must('POST', base, jwt, { key: `FUZZ_VAR_${++this.serial}`, value: 'fuzz-secret', secret: true })).id })
  }

  /** A container app and a static app; remade under fresh names when a fuzzed request deleted one. */
  private async ensureHosting (): Promise<void> {
    const jwt = this.get('platformJwt')
    const base = `/api/projects/${this.get('projectId')}/backend`
    for (const [key, path] of [['hostingAppId', 'apps'], ['staticAppId', 'static-apps']] as const) {
      const id = this.values.get(key)
      if (id !== undefined && (await this.status(`${base}/${path}/${id}`, jwt)).status === 200) continue
      if (id !== undefined) this.rebuilding(key)
      this.set({ [key]: (await this.must('POST', `${base}/${path}`, jwt, { name: `fuzz-${path}-${++this.serial}` })).id })
    }
  }

  /** A zone on the built-in server with one record; each remade under a fresh name, as another project may still hold the old one. */
  private async ensureDns (): Promise<void> {
    const jwt = this.get('platformJwt')
    const dns = `/api/projects/${this.get('projectId')}/dns`
    const zoneId = this.values.get('zoneId')
    if (zoneId === undefined || (await this.status(`${dns}/zones/${zoneId}`, jwt)).status !== 200) {
      if (zoneId !== undefined) this.rebuilding('dns zone')
      this.set({ zoneId: (await this.must('POST', `${dns}/zones`, jwt, { name: `fuzz${++this.serial}.example` })).id })
      this.values.delete('dnsRecordId')
    }
    const recordId = this.values.get('dnsRecordId')
    if (recordId !== undefined && (await this.status(`${dns}/records/${recordId}`, jwt)).status === 200) return
    if (recordId !== undefined) this.rebuilding('dns record')
    const record = await this.must('POST', `${dns}/records`, jwt, { zoneId: this.get('zoneId'), name: `r${++this.serial}`, type: 'A', content: '192.0.2.1' })
    this.set({ dnsRecordId: record.id })
  }

  private async ensureProjectCredentials (prefix: '' | 'other'): Promise<void> {
    const jwt = this.get('platformJwt')
    const name = (key: string): string => prefix === '' ? key : `${prefix}${key[0].toUpperCase()}${key.slice(1)}`
    const projectId = this.get(name('projectId'))
    const tokenId = this.values.get(name('serviceTokenId'))
    const tokens = await this.must('GET', `/api/projects/${projectId}/service-tokens`, jwt) as Array<{ id: string }>
    if (tokenId === undefined || !tokens.some((token) => token.id === tokenId)) {
      if (tokenId !== undefined) this.rebuilding(name('serviceToken'))
      const token = await this.must('POST', `/api/projects/${projectId}/service-tokens`, jwt, { name: `fuzz ${++this.serial}` })
      this.set({ [name('serviceToken')]: token.token, [name('serviceTokenId')]: token.id })
    }
    const projectJwt = this.values.get(name('projectJwt'))
    if (projectJwt !== undefined && (await this.status(`/api/p/${projectId}/auth/me`, projectJwt)).status === 200) return
    if (projectJwt !== undefined) this.rebuilding(name('projectJwt'))
    const email = `user${++this.serial}@fuzz.test`
    const session = await this.must('POST', `/api/p/${projectId}/auth/register`, null, { email, password: PASSWORD })
    const now = Math.floor(Date.now() / 1000)
    const projectKey = this.app.deriveSecretKey(`jwt:project:${projectId}`)
    this.set({
      [name('endUserId')]: session.user.id,
      [name('endUserEmail')]: email,
      [name('projectJwt')]: session.accessToken,
      [name('expiredProjectJwt')]: signJwt({ sub: session.user.id, pid: projectId, type: 'project', aud: `plinth:project:${projectId}`, iss: this.app.config.publicUrl, iat: now - 7200, exp: now - 3600 }, projectKey)
    })
  }

  private async buildData (): Promise<void> {
    const jwt = this.get('platformJwt')
    const projectId = this.get('projectId')
    const collections = `/api/projects/${projectId}/collections`
    const users = await this.must('GET', `${collections}/${USERS}`, jwt)
    this.usersDefinition = { fields: [...users.fields, { name: 'nickname', type: 'text', max: 40 }], indexes: users.indexes, methods: USERS_METHODS }
    this.stamps.set(USERS, (await this.must('PUT', `${collections}/${USERS}`, jwt, this.usersDefinition)).updatedAt)
    this.stamps.set(TAGS, (await this.must('POST', collections, jwt, { name: TAGS, ...TAGS_DEFINITION })).updatedAt)
    this.stamps.set(THINGS, (await this.must('POST', collections, jwt, { name: THINGS, ...THINGS_DEFINITION })).updatedAt)
    this.recordIds = []
    await this.ensureRecords()
  }

  /** A repository `fuzz` with a commit, a deploy key, a protected-branch rule, a protected-tag rule and a label. */
  private async ensureGit (): Promise<void> {
    const jwt = this.get('platformJwt')
    const repos = `/api/projects/${this.get('projectId')}/git/repositories`
    const repo = await this.status(`${repos}/fuzz`, jwt)
    if (repo.status !== 200 || repo.data.empty === true) {
      this.rebuilding('git repository')
      if (repo.status === 200) await this.must('DELETE', `${repos}/fuzz`, jwt)
      await this.must('POST', repos, jwt, { name: 'Fuzz', slug: 'fuzz', readme: true })
      this.forget(GIT_FIXTURES)
    }
    // A commit stays readable once made (nothing collects garbage here): read it once per repository, not per repair (each read spawns git).
    if (!this.values.has('commitSha')) {
      const commits = await this.must('GET', `${repos}/fuzz/commits?limit=1`, jwt)
      this.set({ repoSlug: 'fuzz', commitSha: commits.items[0].sha })
    }
    const keys = await this.must('GET', `${repos}/fuzz/deploy-keys`, jwt) as Array<{ id: string }>
    if (!keys.some((key) => key.id === this.values.get('deployKeyId'))) {
      this.rebuilding('deploy key')
      this.set({ deployKeyId: (await this.must('POST', `${repos}/fuzz/deploy-keys`, jwt, { title: 'fuzz', key: sshPublicKey() })).id })
    }
    const rules = await this.must('GET', `${repos}/fuzz/protected-branches`, jwt) as Array<{ id: string }>
    if (!rules.some((rule) => rule.id === this.values.get('ruleId'))) {
      this.rebuilding('protected-branch rule')
      for (const rule of rules) await this.must('DELETE', `${repos}/fuzz/protected-branches/${rule.id}`, jwt)
      this.set({ ruleId: (await this.must('POST', `${repos}/fuzz/protected-branches`, jwt, { pattern: 'release/*' })).id })
    }
    const tagRules = await this.must('GET', `${repos}/fuzz/protected-tags`, jwt) as Array<{ id: string }>
    if (!tagRules.some((rule) => rule.id === this.values.get('tagRuleId'))) {
      this.rebuilding('protected-tag rule')
      for (const rule of tagRules) await this.must('DELETE', `${repos}/fuzz/protected-tags/${rule.id}`, jwt)
      this.set({ tagRuleId: (await this.must('POST', `${repos}/fuzz/protected-tags`, jwt, { pattern: 'v*' })).id })
    }
    const labels = await this.must('GET', `${repos}/fuzz/labels`, jwt) as Array<{ id: string }>
    if (!labels.some((label) => label.id === this.values.get('labelId'))) {
      this.rebuilding('label')
      for (const label of labels) await this.must('DELETE', `${repos}/fuzz/labels/${label.id}`, jwt)
      this.set({ labelId: (await this.must('POST', `${repos}/fuzz/labels`, jwt, { name: 'fuzz', color: '#123456' })).id })
    }
    await this.ensureMergeRequest(repos, jwt)
  }

  /** An open merge request of a branch one commit ahead of main, with a comment and a review. */
  private async ensureMergeRequest (repos: string, jwt: string): Promise<void> {
    const mrs = `${repos}/fuzz/merge-requests`
    const current = this.values.get('iid')
    if (current === undefined || (await this.status(`${mrs}/${current}`, jwt)).data?.state !== 'open') {
      this.rebuilding('merge request')
      // The API makes no commits: the branch gets one straight from git, on top of main.
      const { gitDir } = await this.app.git.repositories.get(this.get('projectId'), 'fuzz')
      const git = (...args: string[]) => execFileSync('git', [`--git-dir=${gitDir}`, ...args], { env: { PATH: process.env.PATH, GIT_AUTHOR_NAME: 'fuzz', GIT_AUTHOR_EMAIL: 'fuzz@example.com', GIT_COMMITTER_NAME: 'fuzz', GIT_COMMITTER_EMAIL: 'fuzz@example.com' } }).toString().trim()
      git('update-ref', 'refs/heads/fuzz-mr', git('commit-tree', 'refs/heads/main^{tree}', '-p', 'refs/heads/main', '-m', 'fuzz'))
      const open = (await this.must('GET', `${mrs}?source=fuzz-mr`, jwt)).items as Array<{ iid: number }>
      const iid = open[0]?.iid ?? (await this.must('POST', mrs, jwt, { sourceBranch: 'fuzz-mr', title: 'Fuzz' })).iid
      this.set({ iid: String(iid) })
      for (const stale of ['commentId', 'reviewId']) this.values.delete(stale)
    }
    const mr = `${mrs}/${this.get('iid')}`
    const comments = await this.must('GET', `${mr}/comments`, jwt) as Array<{ id: string }>
    if (!comments.some((comment) => comment.id === this.values.get('commentId'))) {
      this.set({ commentId: (await this.must('POST', `${mr}/comments`, jwt, { body: 'fuzz' })).id })
    }
    const reviews = await this.must('GET', `${mr}/reviews`, jwt) as Array<{ id: string, dismissed: boolean }>
    if (!reviews.some((review) => review.id === this.values.get('reviewId'))) {
      this.set({ reviewId: (await this.must('POST', `${mr}/reviews`, jwt, { state: 'commented', body: 'fuzz' })).id })
    }
  }

  private thingValues (n: number): Record<string, unknown> {
    return {
      title: `thing ${n}`,
      count: n % 1000,
      flag: n % 2 === 0,
      when: '2026-01-01T00:00:00.000Z',
      meta: { n },
      contact: `c${n}@fuzz.test`,
      site: 'https://example.com/',
      status: 'draft',
      labels: ['x'],
      tag: this.get('tagId')
    }
  }

  /** Three records of `things` (the first holds the file, the second the upload session) and one tag of the end user. */
  private async ensureRecords (): Promise<void> {
    const jwt = this.get('platformJwt')
    const data = `/api/p/${this.get('projectId')}`
    const tagId = this.values.get('tagId')
    if (tagId === undefined || (await this.status(`${data}/${TAGS}/${tagId}`, jwt)).status !== 200) {
      const tag = await this.must('POST', `${data}/${TAGS}`, this.get('projectJwt'), { label: 'fuzz' })
      this.set({ tagId: tag.id })
    }
    for (let i = 0; i < 3; i++) {
      const id = this.recordIds[i]
      if (id !== undefined && (await this.status(`${data}/${THINGS}/${id}`, jwt)).status === 200) continue
      if (id !== undefined) this.rebuilding(`record ${i}`)
      this.recordIds[i] = (await this.must('POST', `${data}/${THINGS}`, jwt, this.thingValues(++this.serial))).id
      if (i === 0) this.values.delete('fileId')
      if (i === 1) this.values.delete('sessionId')
    }
    this.set({ recordId: this.recordIds[0], fileRecordId: this.recordIds[0], sessionRecordId: this.recordIds[1], otherRecordId: this.recordIds[2] })
    await this.ensureFile()
    await this.ensureSession()
    const page = await this.must('GET', `${data}/${THINGS}?limit=1`, jwt)
    this.set({ cursor: page.nextCursor ?? 'none' })
  }

  private async ensureFile (): Promise<void> {
    const jwt = this.get('platformJwt')
    const record = `/api/p/${this.get('projectId')}/${THINGS}/${this.get('fileRecordId')}`
    const fileId = this.values.get('fileId')
    const held = (await this.status(record, jwt)).data?.doc as { id?: string } | null | undefined
    if (fileId !== undefined && held?.id === fileId) return
    if (fileId !== undefined) this.rebuilding('file')
    const form = multipart('fuzz.png', 'image/png', PNG)
    const res = await this.app.inject({ method: 'POST', url: `${record}/files/doc`, headers: { authorization: `Bearer ${jwt}`, 'content-type': form.contentType }, payload: form.payload })
    if (res.statusCode !== 201) throw new (res.statusCode >= 500 ? FixtureServerError : Error)(`fixture upload: ${res.statusCode} ${res.body}`)
    const file = res.json().data.file
    const download = await this.app.inject({ url: `${record}/files/doc/${file.id as string}`, headers: { authorization: `Bearer ${jwt}` } })
    this.set({ fileId: file.id, fileEtag: String(download.headers.etag) })
  }

  private async ensureSession (): Promise<void> {
    const jwt = this.get('platformJwt')
    const base = `/api/p/${this.get('projectId')}/${THINGS}/${this.get('sessionRecordId')}/files/doc/upload-sessions`
    const sessionId = this.values.get('sessionId')
    if (sessionId !== undefined && (await this.status(`${base}/${sessionId}`, jwt)).data?.status === 'open') return
    if (sessionId !== undefined) this.rebuilding('upload session')
    const session = await this.must('POST', base, jwt, { name: 'part.bin', size: SESSION_SIZE, type: 'application/octet-stream' })
    this.set({ sessionId: session.id })
  }

  private async ensureCollection (name: string, definition: object, stamp: string): Promise<string> {
    const jwt = this.get('platformJwt')
    const url = `/api/projects/${this.get('projectId')}/collections`
    const current = await this.status(`${url}/${name}`, jwt)
    if (current.status === 200 && current.data.updatedAt === stamp) return stamp
    this.rebuilding(`collection ${name}`)
    if (current.status === 200) {
      const res = await this.app.inject({ method: 'PUT', url: `${url}/${name}`, headers: { authorization: `Bearer ${jwt}` }, payload: definition })
      if (res.statusCode === 200) return res.json().data.updatedAt as string
      await this.must('DELETE', `${url}/${name}`, jwt)
    }
    return (await this.must('POST', url, jwt, { name, ...definition })).updatedAt as string
  }

  /**
   * Puts back whatever a fuzzed request deleted, revoked, switched off or
   * redefined; after a tracker operation only the tracker's fixtures, which
   * are all such an operation can touch.
   */
  async repair (only?: 'tracker'): Promise<void> {
    if (only === 'tracker') {
      await ensureTracker(this.trackerCalls())
      return
    }
    await this.ensurePats()
    const jwt = this.get('platformJwt')
    const keys = await this.must('GET', '/api/auth/ssh-keys', jwt) as Array<{ id: string }>
    if (!keys.some((key) => key.id === this.get('sshKeyId'))) {
      this.rebuilding('ssh key')
      this.set({ sshKeyId: (await this.must('POST', '/api/auth/ssh-keys', jwt, { title: 'fuzz', key: this.sshKey })).id })
    }
    const members = await this.status(`/api/organizations/${this.get('orgId')}/members`, jwt)
    const roles = new Map((members.data as Array<{ id: string, role: string }> | undefined ?? []).map((member) => [member.id, member.role]))
    if (roles.get(this.get('ownerId')) !== 'owner' || !roles.has(this.get('memberId'))) {
      this.rebuilding('organization')
      await this.buildOrganization()
      return
    }
    await this.ensureMemberSets()
    for (const prefix of ['', 'other'] as const) {
      try {
        await this.repairProject(prefix)
      } catch (error) {
        if (error instanceof FixtureServerError) throw error
        // What a fuzzed request left may be past putting back (a definition the stored records no longer fit): start afresh.
        this.rebuilding(`project ${prefix} afresh`)
        await this.buildProject(prefix)
      }
    }
  }

  private async repairProject (prefix: '' | 'other'): Promise<void> {
    const jwt = this.get('platformJwt')
    const projectId = this.get(prefix === '' ? 'projectId' : 'otherProjectId')
    const project = await this.status(`/api/projects/${projectId}`, jwt)
    if (project.status !== 200) {
      this.rebuilding(`project ${prefix}`)
      await this.buildProject(prefix)
      return
    }
    if (project.data.authEnabled !== true) {
      this.rebuilding(`project ${prefix} auth`)
      await this.must('POST', `/api/projects/${projectId}/auth/toggle`, jwt, { enabled: true })
    }
    await this.ensureProjectCredentials(prefix)
    if (prefix === '') {
      for (const [name, definition] of [[USERS, this.usersDefinition], [TAGS, TAGS_DEFINITION], [THINGS, THINGS_DEFINITION]] as const) {
        this.stamps.set(name, await this.ensureCollection(name, definition, this.stamps.get(name) ?? ''))
      }
      await this.ensureRecords()
      await this.ensureLlm()
      await this.ensureRecordWebhook()
      await this.ensureVariable()
      await this.ensureBuiltFamilies()
    }
  }
}
