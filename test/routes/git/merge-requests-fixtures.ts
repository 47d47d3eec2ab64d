import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import { call } from '../../helper.js'
import { gitClient, gitWorld } from './fixtures.js'

/**
 * A listening app with a repository "repo" (README on main) and a working
 * copy pushing to it over smart HTTP as the owner, so every branch move goes
 * through the same receive-pack (and push hook) a real client uses.
 */
export async function mrWorld (t: Test) {
  const world = await gitWorld(t)
  const git = gitClient(t)
  await world.createRepo({ name: 'Repo', readme: true })
  const token = await world.pat(world.owner.auth)
  const work = join(git.home, 'work')
  const cloned = await git.run(['clone', '-q', world.url('repo', token), work])
  if (cloned.code !== 0) throw new Error(cloned.stderr)
  const repoApi = `${world.api}/repositories/repo`
  const mrApi = `${repoApi}/merge-requests`

  /** One commit of `files` on `branch` (started from `from` when given), pushed; its id. */
  const commit = async (branch: string, files: Record<string, string>, options: { from?: string, message?: string } = {}): Promise<string> => {
    await git.run(['fetch', '-q', 'origin'], { cwd: work })
    await git.run(['checkout', '-q', '-B', branch, `origin/${options.from ?? branch}`], { cwd: work })
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(join(work, path, '..'), { recursive: true })
      writeFileSync(join(work, path), content)
    }
    await git.run(['add', '-A'], { cwd: work })
    const committed = await git.run(['commit', '-q', '-m', options.message ?? `change ${Object.keys(files).join(', ')}`], { cwd: work })
    if (committed.code !== 0) throw new Error(committed.stderr + committed.stdout)
    const pushed = await git.run(['push', '-q', 'origin', branch], { cwd: work })
    if (pushed.code !== 0) throw new Error(pushed.stderr)
    return (await git.run(['rev-parse', 'HEAD'], { cwd: work })).stdout.trim()
  }

  const openMr = async (body: Record<string, unknown>, auth = world.member.auth) => await call(world.app, 'POST', mrApi, auth, body)
  const repo = async () => await world.app.git.repositories.get(world.projectId, 'repo')
  return { ...world, git, token, work, repoApi, mrApi, commit, openMr, repo }
}

export type MrWorld = Awaited<ReturnType<typeof mrWorld>>
