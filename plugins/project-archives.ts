import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { systemClock } from '../services/platform/clock.js'
import { exportProject, exportTempFile, type ProjectArchivePorts } from '../services/backup/project-export.js'
import { importProject } from '../services/backup/project-import.js'
import type { ProjectManifest } from '../services/backup/project-archive.js'
import type { Project } from '../services/projects/projects.js'
import type { DeployFailure } from '../services/backup/project-apps.js'

export interface ProjectArchives {
  /** The archive of `project` in a temporary file, which `dispose` removes. */
  export: (project: Project) => Promise<{ file: string, manifest: ProjectManifest, dispose: () => Promise<void> }>
  import: (orgId: string, userId: string, file: string) => Promise<{ project: Project, manifest: ProjectManifest, deployFailures: DeployFailure[] }>
}

declare module 'fastify' {
  interface FastifyInstance {
    projectArchives: ProjectArchives
  }
}

/** package.json's version, beside the sources (tsx) or one folder up from the build (dist/). */
function serverVersion (): string {
  for (const dir of [join(import.meta.dirname, '..'), join(import.meta.dirname, '..', '..')]) {
    try {
      const { name, version } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown, version?: unknown }
      if (name === 'plinth' && typeof version === 'string') return version
    } catch {}
  }
  return 'unknown'
}

/** Per-project export and import (docs/export.md), over the families' own services. */
async function projectArchivesPlugin (app: FastifyInstance): Promise<void> {
  const ports: ProjectArchivePorts = {
    store: app.store,
    fileStore: app.files.store,
    definitions: app.collections.definitions,
    repositories: app.git.repositories,
    reader: app.git.reader,
    git: app.git.git,
    clock: systemClock,
    serverVersion: serverVersion(),
    hosting: { ...app.hosting, uploads: app.files.uploads }
  }
  app.decorate('projectArchives', {
    export: async (project) => {
      const { file, dispose } = await exportTempFile()
      try {
        return { file, manifest: await exportProject(ports, project, file), dispose }
      } catch (error) {
        await dispose()
        throw error
      }
    },
    import: async (orgId, userId, file) => await importProject({ ...ports, projects: app.projects, limits: { maxEntryBytes: app.config.backup.importMaxEntryBytes, maxUnpackedBytes: app.config.backup.importMaxUnpackedBytes } }, orgId, userId, file)
  } satisfies ProjectArchives)
}

export default fp(projectArchivesPlugin, {
  name: 'plinth-project-archives',
  fastify: '5.x',
  dependencies: ['plinth-config', 'plinth-store', 'plinth-projects', 'plinth-collections', 'plinth-files', 'plinth-git', 'plinth-hosting']
})
