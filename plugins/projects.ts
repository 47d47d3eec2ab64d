import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { systemClock } from '../services/platform/clock.js'
import { IMPORT_SWEEP_EVERY_MS, IMPORT_SWEEP_JOB, Projects } from '../services/projects/projects.js'
import { projectSchemas } from '../schemas/projects.js'

declare module 'fastify' {
  interface FastifyInstance {
    projects: Projects
  }
}

// After a crash the queued purge finishes the job; when the request completes it, the job finds nothing left.
export const PURGE_SAFETY_DELAY_MS = 60_000
const PURGE_JOB = 'project.purge'

/**
 * Projects. What other families keep about a project is wired through the
 * hook lists here (`projects.onDelete`, `projects.onAuthEnabled`), which the
 * plugins registered after this one fill in.
 */
async function projectsPlugin (app: FastifyInstance): Promise<void> {
  const projects = new Projects(app.store, {
    clock: systemClock,
    storeClock: app.storeClock,
    schedulePurge: async (projectId) => { await app.jobs.enqueue(PURGE_JOB, { projectId }, { delayMs: PURGE_SAFETY_DELAY_MS }) }
  })
  for (const schema of projectSchemas) app.addSchema(schema)
  await projects.init()
  app.registerJobHandler(PURGE_JOB, async (payload) => { await projects.purge(String(payload.projectId)) })
  app.registerJobHandler(IMPORT_SWEEP_JOB, async () => ({ swept: await projects.sweepAbandonedImports() }))
  app.addHook('onReady', async () => { await app.jobs.schedule(IMPORT_SWEEP_JOB, IMPORT_SWEEP_EVERY_MS) })
  app.decorate('projects', projects)
}

export default fp(projectsPlugin, { name: 'plinth-projects', fastify: '5.x', dependencies: ['plinth-store', 'plinth-jobs'] })
