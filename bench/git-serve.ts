import { relative } from 'node:path'
import { benchOwner, startBenchApp } from './bench-app.js'
import { importHistory } from './git-history.js'

/**
 * The real app with git hosting on, on a temp DATA_DIR, holding one private
 * repository made by the service and filled with a generated 2,000-commit
 * history. It reports where that bare repository lies under GIT_REPOS_DIR so
 * git http-backend can serve the very same one.
 */
const COMMITS = 2000
const { app } = await startBenchApp({ GIT_HOSTING_ENABLED: 'true' })
const address = await app.listen({ port: 0, host: '127.0.0.1' })
const { userId, accessToken, orgId } = await benchOwner(app)
const { token: pat } = await app.identity.apiKeys.create(userId, { name: 'bench' })
const project = await app.projects.create(orgId, userId, { name: 'Bench' })
const repo = await app.git.repositories.create(project.id, await app.git.signature(userId), { name: 'History' })
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
