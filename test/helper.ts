import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyPluginAsync } from 'fastify'
import type { Test } from 'tap'
import { buildApp } from '../app.js'
import { loadConfig, type Config } from '../services/config.js'

/** A fresh temp DATA_DIR, removed when the test ends. */
export function tempDir (t: Test, prefix = 'plinth-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

export function testConfig (t: Test, env: Record<string, string> = {}): Config {
  return loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: tempDir(t), ...env })
}

/**
 * Builds the real app on a temp DATA_DIR (embedded store unless MONGODB_URL
 * is passed in env). `extra` lets a test mount its own probe routes beside the
 * product's, e.g. to exercise the error plugin with a body schema.
 */
export async function buildTestApp (t: Test, options: { env?: Record<string, string>, extra?: FastifyPluginAsync } = {}) {
  const app = await buildApp(testConfig(t, options.env))
  if (options.extra !== undefined) await app.register(options.extra)
  await app.ready()
  t.teardown(() => app.close())
  return app
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
