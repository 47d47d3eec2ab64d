import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { RESEAL_EVERY_MS, RESEAL_JOB, Resealer } from '../services/platform/reseal.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Where each family declares the values it seals under the master key, so a rotation re-seals them (docs/operations.md). */
    resealer: Resealer
  }
}

/** The job this one replaced, which re-sealed LLM keys only. */
const FORMER_LLM_RESEAL_JOB = 'llm.reseal'

/**
 * Master key rotation: the families declare their sealed values (in their own
 * plugins, registered after this one), and the recurring re-seal job seals
 * again under the current key whatever a retired key sealed.
 */
async function resealPlugin (app: FastifyInstance): Promise<void> {
  const resealer = new Resealer({ store: app.store, box: app.secrets })
  app.decorate('resealer', resealer)
  app.registerJobHandler(RESEAL_JOB, async () => {
    // With no retired key listed nothing can be re-sealed: the 6-hourly run reads no collection.
    if (app.config.retiredMasterKeys.length === 0) return {}
    const counts = await resealer.run()
    const total = (field: 'resealed' | 'changed' | 'unreadable'): number => Object.values(counts).reduce((sum, count) => sum + count[field], 0)
    const [resealed, changed, unreadable] = [total('resealed'), total('changed'), total('unreadable')]
    // The operator waits for this line before dropping a retired key, so it is written on every run while one is listed.
    if (resealed + changed + unreadable > 0 || app.config.retiredMasterKeys.length > 0) {
      app.log.info({ counts, resealed, changed, unreadable }, `sealed values: ${resealed} re-sealed under the current master key, ${changed} documents changed meanwhile (taken by the next run), ${unreadable} no key opens`)
    }
    return counts
  })
  app.addHook('onReady', async () => {
    await app.jobs.unschedule(FORMER_LLM_RESEAL_JOB)
    await app.jobs.schedule(RESEAL_JOB, RESEAL_EVERY_MS)
    // Started with a retired key, a node re-seals now rather than at the next scheduled run. Keyed: nodes restarted
    // together run it one at a time (a run asked for meanwhile runs again after), not racing each other's writes.
    if (app.config.retiredMasterKeys.length > 0) await app.jobs.enqueueKeyed(RESEAL_JOB, 'rotation')
  })
}

export default fp(resealPlugin, { name: 'plinth-reseal', fastify: '5.x', dependencies: ['plinth-config', 'plinth-store', 'plinth-secrets', 'plinth-jobs'] })
