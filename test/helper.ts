import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { FastifyPluginAsync } from 'fastify'
import type { Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { MongoClient } from 'mongodb'
import { buildApp } from '../app.js'
import type { PlinthServerOptions } from '../options.js'
import { loadConfig, type Config } from '../services/config.js'
import { ManualClock, type Clock } from '../services/platform/clock.js'
import { createIdGenerator } from '../services/platform/ids.js'
import { JobQueue, type JobQueueDeps } from '../services/jobs/queue.js'
import { openSqliteStore } from '../services/store/sqlite/index.js'
import { openStore } from '../services/store/index.js'
import { mongoDatabase, openMongoStore } from '../services/store/mongodb.js'
import type { Document, SharedReads, Store, StoreCollection, StoreExtensions } from '../services/store/types.js'
import { CollectionDefinitions } from '../services/collections/definitions.js'
import { Records } from '../services/collections/records.js'
import { Cursors } from '../services/collections/query.js'
import { WriteGate } from '../services/collections/write-gate.js'
import { PROJECT_USERS_TABLE } from '../services/projects/naming.js'
import { ProjectUsers } from '../services/projects/project-users.js'
import type { FieldDefinitionT } from '../schemas/collections.js'
import { MemberSets, PERMISSION_GROUPS, TEAMS } from '../services/orgs/member-sets.js'
import { membershipId, type MembershipRecord } from '../services/orgs/memberships.js'
import { Organizations } from '../services/orgs/organizations.js'
import { PermissionResolver } from '../services/orgs/resolver.js'
import { PlatformUsers } from '../services/identity/users.js'
import { AppError } from '../services/platform/errors.js'

/** A fresh temp DATA_DIR, removed when the test ends. */
export function tempDir (t: Test, prefix = 'plinth-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/**
 * The engine the suite runs on: MongoDB when MONGODB_URL points at a
 * deployment (a replica set), the embedded SQLite store otherwise. Every test
 * app and temp store then gets a database of its own, dropped when it ends.
 */
export const TEST_MONGODB_URL = process.env.MONGODB_URL?.trim() === '' ? undefined : process.env.MONGODB_URL?.trim()
export const testEngine: Store['engine'] = TEST_MONGODB_URL === undefined ? 'sqlite' : 'mongodb'

function testDatabaseName (): string {
  return `plinth_test_${randomBytes(8).toString('hex')}`
}

/**
 * Drops the database a test's MongoDB-engine store used (through its own
 * client, or a new one when the test closed the store); nothing to do for the
 * embedded engine, whose DATA_DIR goes with the test.
 */
async function dropTestDatabase (store: Store, name: string): Promise<void> {
  if (TEST_MONGODB_URL === undefined) return
  const own = mongoDatabase(store)
  if (await own?.dropDatabase().then(() => true, () => false) === true) return
  const client = new MongoClient(TEST_MONGODB_URL)
  try {
    await client.db(name).dropDatabase()
  } finally {
    await client.close()
  }
}

/** A Store in a fresh temp DATA_DIR (or a fresh MongoDB database), dropped and closed when the test ends: what service tests run on. */
export async function tempStore (t: Test, prefix = 'plinth-store-'): Promise<Store> {
  const mongodbDb = testDatabaseName()
  const store = await openStore({ dataDir: tempDir(t, prefix), mongodbUrl: TEST_MONGODB_URL ?? null, mongodbDb })
  t.teardown(async () => {
    await dropTestDatabase(store, mongodbDb)
    await store.close()
  })
  return store
}

/**
 * ProjectUsers wired as the app wires it: sign-up records are written by the
 * records service against each project's `_users` definition. `enable` turns
 * a project's end users on; `declare` adds profile fields to its definition;
 * `stats.writes` counts sign-ups that reached the records service.
 */
export function projectUsersOn (store: Store, clock: Clock) {
  const stats = { writes: 0 }
  const writes = new WriteGate()
  const definitions = new CollectionDefinitions(store, { clock, writes })
  const records = new Records(store, { clock, newId: createIdGenerator(() => clock.nowMs()), cursors: new Cursors(randomBytes(32)), findCollection: async (projectId, name) => await definitions.find(projectId, name), writes })
  const users = new ProjectUsers(store, async (projectId, account, profile) => {
    stats.writes++
    return await records.createUser(projectId, account, profile)
  }, new Cursors(randomBytes(32)))
  const enable = async (projectId: string): Promise<void> => {
    await users.enable(projectId)
    await definitions.ensureUsersCollection(projectId)
  }
  const declare = async (projectId: string, fields: Array<Partial<FieldDefinitionT> & { name: string }>): Promise<void> => {
    const current = await definitions.get(projectId, PROJECT_USERS_TABLE)
    await definitions.update(projectId, PROJECT_USERS_TABLE, { fields: [...current.fields, ...fields.map((field) => ({ type: 'json' as const, ...field }))] })
  }
  return { users, definitions, records, writes, enable, declare, stats }
}

/**
 * Organizations, teams, groups and the resolver on a Store, with platform
 * users; projects are whatever ids start with `proj`. `join` writes a
 * membership straight to the Store.
 */
export async function orgsOn (store: Store, clock: Clock) {
  const unknownProjects = async (_orgId: string, ids: string[]) => ids.filter((id) => !id.startsWith('proj'))
  const teams = new MemberSets(store, { clock, kind: TEAMS, unknownProjects })
  const groups = new MemberSets(store, { clock, kind: PERMISSION_GROUPS, unknownProjects })
  const users = new PlatformUsers(store, clock)
  await users.init()
  const organizations = new Organizations(store, {
    clock, users, teams, groups, contents: { deleteAllInOrganization: async () => {}, unknownIn: unknownProjects }, schedulePurge: async () => {}
  })
  await Promise.all([teams.init(), groups.init(), organizations.init()])
  const resolver = new PermissionResolver(store, { teams, groups })
  const memberships = store.collection<MembershipRecord>('organization_members')
  const join = async (orgId: string, userId: string, role: MembershipRecord['role'], grants: MembershipRecord['grants'] = []) => {
    await memberships.insertOne({ _id: membershipId(orgId, userId), orgId, userId, role, grants, createdAt: clock.now(), updatedAt: clock.now() })
  }
  return { teams, groups, users, organizations, resolver, join }
}

/** The Store, counting every read of one collection, private or shared: for tests that a lookup reads only when it must. */
export function countingReads (store: Store, collection: string): { store: Store, reads: () => number } {
  let reads = 0
  const counted = <R extends Pick<SharedReads<any>, 'findOne' | 'find'>>(inner: R): R => {
    const wrapped: R = Object.create(inner)
    wrapped.findOne = async (filter) => { reads++; return await inner.findOne(filter) }
    wrapped.find = (filter, options) => { reads++; return inner.find(filter, options) }
    return wrapped
  }
  const shared: StoreExtensions['shared'] = (name) => name === collection ? counted(store.extensions.shared(name)) : store.extensions.shared(name)
  const counting: Store = Object.create(store, { extensions: { value: { ...store.extensions, shared } } })
  counting.collection = <T extends Document>(name: string): StoreCollection<T> => name === collection ? counted(store.collection<T>(name)) : store.collection<T>(name)
  return { store: counting, reads: () => reads }
}

/**
 * The configuration of a test app: a temp DATA_DIR, on MongoDB a fresh
 * database and a master key every node of a deployment would share, and no
 * hosting gateway unless the test asks for one (its default port would be
 * shared by every test running at once).
 */
export function testConfig (t: Test, env: Record<string, string> = {}): Config {
  const engine: Record<string, string> = TEST_MONGODB_URL === undefined
    ? {}
    : { MONGODB_URL: TEST_MONGODB_URL, MONGODB_DB: testDatabaseName(), PLINTH_MASTER_KEY: randomBytes(32).toString('base64') }
  return loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: tempDir(t), GATEWAY_PORT: 'off', ...engine, ...env })
}

/**
 * Builds the real app on a temp DATA_DIR, with the suite's engine (see
 * testEngine). `extra` lets a test mount its own probe routes beside the
 * product's, e.g. to exercise the error plugin with a body schema; `server`
 * overrides Fastify's options (a logger writing to a stream the test reads).
 */
export async function buildTestApp (t: Test, options: { env?: Record<string, string>, extra?: FastifyPluginAsync, server?: Partial<PlinthServerOptions> } = {}) {
  const app = await buildApp(testConfig(t, options.env), options.server)
  if (options.extra !== undefined) await app.register(options.extra)
  // Whoever closes the app, the test or this teardown: before the store goes. A failure here fails the test;
  // a test that closes the store itself builds its app with hosting off, so there is nothing to ask.
  app.addHook('preClose', async () => { await stopHostedInstances(app) })
  await app.ready()
  t.teardown(async () => {
    await dropTestDatabase(app.store, app.config.mongodbDb)
    await app.close()
  })
  return app
}

/**
 * A server that closes leaves its apps' instances running, for the next
 * start to adopt; a test's app must not, or every test would leave
 * sandboxed processes behind.
 */
export async function stopHostedInstances (app: Awaited<ReturnType<typeof buildApp>>): Promise<void> {
  if (!app.hosting.enabled) return
  for (const instance of await app.hosting.releases.running()) await app.hosting.releases.stop(instance, 'the test ended')
}

export type TestApp = Awaited<ReturnType<typeof buildTestApp>>

/** A platform user with a fresh platform JWT, created through the services (the auth routes have their own tests). */
export async function signUp (app: TestApp, email: string): Promise<{ id: string, token: string, auth: Record<string, string> }> {
  const user = await app.identity.users.register({ email, password: 'correct horse battery', name: email.split('@')[0] })
  const { accessToken } = await app.identity.sessions.start(user.id)
  return { id: user.id, token: accessToken, auth: { authorization: `Bearer ${accessToken}` } }
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/** One API call through inject, with the parsed answer: the shape every route test asserts on. */
export async function call (app: TestApp, method: HttpMethod, url: string, headers: Record<string, string>, payload?: unknown) {
  const res = await app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) })
  return { status: res.statusCode, body: res.json(), headers: res.headers }
}

/** An organization "Acme" of `owner`, with a member and a viewer, and an outsider who belongs to none. */
export async function orgWithRoles (app: TestApp) {
  const owner = await signUp(app, 'owner@example.com')
  const member = await signUp(app, 'member@example.com')
  const viewer = await signUp(app, 'viewer@example.com')
  const outsider = await signUp(app, 'outsider@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', owner.auth, { name: 'Acme' })).body.data.id as string
  await call(app, 'POST', `/api/organizations/${orgId}/members`, owner.auth, { userId: member.id, role: 'member' })
  await call(app, 'POST', `/api/organizations/${orgId}/members`, owner.auth, { userId: viewer.id, role: 'viewer' })
  return { owner, member, viewer, outsider, orgId }
}

/** An end user registered through the project's auth route, with its project JWT as a header. */
export async function registerEndUser (app: TestApp, projectId: string, email: string): Promise<{ id: string, auth: Record<string, string> }> {
  const session = (await call(app, 'POST', `/api/p/${projectId}/auth/register`, {}, { email, password: 'long enough 1' })).body.data
  return { id: session.user.id as string, auth: { authorization: `Bearer ${session.accessToken as string}` } }
}

/** The AppError a service call is refused with; anything else (or no refusal) fails the test. */
export async function refusal (promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise
  } catch (error) {
    if (error instanceof AppError) return error
    throw error
  }
  throw new Error('expected a refusal')
}

/** A job queue on its own embedded Store whose clock is `clock` (the queue reads the time from the Store, and has no other). */
export async function openTestJobQueue<C extends Clock = ManualClock> (t: Test, clock?: C, deps: Partial<JobQueueDeps> = {}): Promise<{ store: Store, queue: JobQueue, clock: C }> {
  const storeClock = clock ?? new ManualClock() as unknown as C
  const newId = createIdGenerator(() => storeClock.nowMs())
  // The suite's engine, as every other service test: on MongoDB a database of its own, with the test's clock as its time.
  const mongodbDb = testDatabaseName()
  const store = TEST_MONGODB_URL === undefined
    ? openSqliteStore({ file: join(tempDir(t, 'plinth-jobs-'), 'plinth.db'), newId, clock: storeClock })
    : await openMongoStore({ url: TEST_MONGODB_URL, db: mongodbDb, newId, clock: storeClock })
  t.teardown(async () => {
    await dropTestDatabase(store, mongodbDb)
    await store.close()
  })
  const queue = new JobQueue({ store, newId, ...deps })
  await queue.init()
  return { store, queue, clock: storeClock }
}

/**
 * A throwaway CA and a server certificate under it for `altNames`
 * (`DNS:name`, `IP:address`; the first is also its common name), made with
 * the openssl CLI in `dir`: the paths of the CA's certificate and of the
 * server's certificate and key.
 */
export async function throwawayCertificate (dir: string, caName: string, altNames: string[]): Promise<{ caFile: string, certFile: string, keyFile: string }> {
  const run = promisify(execFile)
  const path = (name: string) => join(dir, name)
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes']
  await run('openssl', ['req', '-x509', ...ec, '-keyout', path('ca.key'), '-out', path('ca.pem'), '-days', '2', '-subj', `/CN=${caName}`])
  await run('openssl', ['req', ...ec, '-keyout', path('server.key'), '-out', path('server.csr'), '-subj', `/CN=${altNames[0].replace(/^\w+:/, '')}`])
  writeFileSync(path('san.ext'), `subjectAltName=${altNames.join(',')}\n`)
  await run('openssl', ['x509', '-req', '-in', path('server.csr'), '-CA', path('ca.pem'), '-CAkey', path('ca.key'), '-CAcreateserial', '-days', '2', '-extfile', path('san.ext'), '-out', path('server.pem')])
  return { caFile: path('ca.pem'), certFile: path('server.pem'), keyFile: path('server.key') }
}
