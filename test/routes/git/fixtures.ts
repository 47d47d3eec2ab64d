import { execFile } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import { buildTestApp, call, orgWithRoles, tempDir, type TestApp } from '../../helper.js'

export interface GitRun { code: number, stdout: string, stderr: string }

/**
 * The real git CLI, isolated from the machine's configuration: its own HOME,
 * no system config, no prompts, a fixed identity. Never throws; tests assert
 * on the exit code and what git printed.
 */
export function gitClient (t: Test) {
  const home = tempDir(t, 'plinth-git-home-')
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    GIT_AUTHOR_NAME: 'Tester',
    GIT_AUTHOR_EMAIL: 'tester@example.com',
    GIT_COMMITTER_NAME: 'Tester',
    GIT_COMMITTER_EMAIL: 'tester@example.com',
    LC_ALL: 'C'
  }
  const run = async (args: string[], options: { cwd?: string, env?: Record<string, string> } = {}): Promise<GitRun> => await new Promise((resolve) => {
    execFile('git', args, { cwd: options.cwd ?? home, env: { ...env, ...options.env }, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr })
    })
  })
  /** A fresh working copy with one commit per entry of `files` (path → content). */
  const workTree = async (name: string, commits: Array<Record<string, string>> = [{ 'README.md': '# hello\n' }]): Promise<string> => {
    const dir = join(home, name)
    mkdirSync(dir, { recursive: true })
    await run(['init', '-q', '-b', 'main', dir])
    for (const [index, files] of commits.entries()) {
      for (const [path, content] of Object.entries(files)) {
        mkdirSync(join(dir, path, '..'), { recursive: true })
        writeFileSync(join(dir, path), content)
      }
      await run(['add', '-A'], { cwd: dir })
      await run(['commit', '-q', '-m', `commit ${index + 1}`], { cwd: dir })
    }
    return dir
  }
  return { run, workTree, home }
}

/** The app listening on 127.0.0.1, an organization with its roles, a project, and a PAT for each role. */
export async function gitWorld (t: Test, env: Record<string, string> = {}) {
  const app = await buildTestApp(t, { env })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  const roles = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', roles.owner.auth, { orgId: roles.orgId, name: 'Site' })).body.data.id as string
  const pat = async (auth: Record<string, string>, scopes?: string[]): Promise<string> =>
    (await call(app, 'POST', '/api/auth/api-keys', auth, { name: 'git', ...(scopes === undefined ? {} : { scopes }) })).body.data.token as string
  const base = `http://127.0.0.1:${port}`
  /** The clone URL, with a token as the password when given. */
  const url = (slug: string, token?: string): string => `${token === undefined ? base : `http://x-token:${token}@127.0.0.1:${port}`}/git/${projectId}/${slug}.git`
  const api = `/api/projects/${projectId}/git`
  const createRepo = async (body: Record<string, unknown>) => await call(app, 'POST', `${api}/repositories`, roles.owner.auth, body)
  return { app, port, base, url, api, projectId, pat, createRepo, ...roles }
}

export type GitWorld = Awaited<ReturnType<typeof gitWorld>>
export type { TestApp }
