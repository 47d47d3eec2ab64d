import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { buildApp } from '../app.js'
import { loadConfig } from '../services/config.js'
import { importHistory } from './git-history.js'

/**
 * The real app with git hosting on, on a temp DATA_DIR, holding one private
 * repository made by the service and filled with a generated 2,000-commit
 * history. It reports where that bare repository lies under GIT_REPOS_DIR so
 * git http-backend can serve the very same one.
 */
const COMMITS = 2000
const dataDir = mkdtempSync(join(tmpdir(), 'plinth-bench-git-'))
const app = await buildApp(loadConfig({ ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent', GIT_HOSTING_ENABLED: 'true', GATEWAY_PORT: 'off' }))
process.once('SIGTERM', () => {
  void app.close().finally(() => {
    rmSync(dataDir, { recursive: true, force: true })
    process.exit(0)
  })
})
const address = await app.listen({ port: 0, host: '127.0.0.1' })
const user = await app.identity.users.register({ email: 'bench@example.com', password: 'bench password 1', name: 'Bench' })
const { accessToken } = await app.identity.sessions.start(user.id)
const { token: pat } = await app.identity.apiKeys.create(user.id, { name: 'bench' })
const org = await app.orgs.organizations.create({ userId: user.id }, { name: 'Bench' })
const project = await app.projects.create(org.id, user.id, { name: 'Bench' })
const repo = await app.git.repositories.create(project.id, await app.git.signature(user.id), { name: 'History' })
await importHistory(repo.gitDir, COMMITS)
process.send?.({
  address,
  accessToken,
  pat,
  projectId: project.id,
  slug: repo.slug,
  reposDir: app.config.git.reposDir,
  // The repository's path under GIT_REPOS_DIR, as git http-backend's PATH_INFO names it.
  repoPath: relative(app.config.git.reposDir, repo.gitDir)
})
