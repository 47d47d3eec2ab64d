import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp } from '../app.js'
import { loadConfig } from '../services/config.js'

export type BenchApp = Awaited<ReturnType<typeof buildApp>>

/**
 * The real app of a bench server process, on `dataDir` (a fresh temp one of
 * `mode` when not given), with `env` over the process's own. The runner stops
 * the process with SIGTERM: the app closes, a temp directory goes with it,
 * then it exits.
 */
export async function startBenchApp (env: Record<string, string>, options: { dataDir?: string, mode?: number } = {}): Promise<{ app: BenchApp, dataDir: string }> {
  const { dataDir } = options
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'plinth-bench-'))
  if (dataDir === undefined && options.mode !== undefined) chmodSync(dir, options.mode)
  const app = await buildApp(loadConfig({ ...process.env, DATA_DIR: dir, LOG_LEVEL: 'silent', GATEWAY_PORT: 'off', ...env }))
  process.once('SIGTERM', () => {
    void app.close().finally(() => {
      if (dataDir === undefined) rmSync(dir, { recursive: true, force: true })
      process.exit(0)
    })
  })
  return { app, dataDir: dir }
}

/** The platform user every bench signs in as, with a session and an organization of its own. */
export async function benchOwner (app: BenchApp): Promise<{ userId: string, accessToken: string, orgId: string }> {
  const user = await app.identity.users.register({ email: 'bench@example.com', password: 'bench password 1', name: 'Bench' })
  const { accessToken } = await app.identity.sessions.start(user.id)
  const org = await app.orgs.organizations.create({ userId: user.id }, { name: 'Bench' })
  return { userId: user.id, accessToken, orgId: org.id }
}

/**
 * End-user auth on, one end user signed up, and the `posts` collection the record rows use: an owner rule on each of
 * `methods`, an index on (author, status). The end user is the owner the rows read and write as.
 */
export async function benchPosts (app: BenchApp, projectId: string, methods = ['list', 'get', 'create', 'update', 'delete']): Promise<{ endUser: Awaited<ReturnType<BenchApp['projectAuth']['auth']['register']>> }> {
  await app.projects.setAuth(projectId, true)
  const endUser = await app.projectAuth.auth.register(projectId, { email: 'end@example.com', password: 'bench password 1' })
  const ownerRule = { requireAuth: true, owner: 'author' }
  await app.collections.definitions.create(projectId, {
    name: 'posts',
    fields: [{ name: 'title', type: 'text', required: true }, { name: 'status', type: 'select', values: ['draft', 'review', 'published'] }, { name: 'author', type: 'text' }, { name: 'views', type: 'number' }],
    indexes: [{ fields: ['author', 'status'] }],
    methods: Object.fromEntries(methods.map((method) => [method, { enabled: true, rule: ownerRule }]))
  })
  return { endUser }
}
