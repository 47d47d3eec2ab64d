import { Type, type Static } from '@sinclair/typebox'
import { integer, type Env } from '../platform/config-env.js'

/**
 * The job worker's slots on this node, by lane (docs/architecture.md,
 * "Background work"), each with the variable it is read from, as
 * `loadConfig().jobs`.
 */
export const JobsConfig = Type.Object({
  slots: Type.Integer({ minimum: 1, maximum: 256, variable: 'JOB_WORKER_SLOTS', description: 'Jobs of the short lane (everything but builds) run at once on this node' }),
  longSlots: Type.Integer({ minimum: 1, maximum: 256, variable: 'JOB_WORKER_LONG_SLOTS', description: 'Jobs of the long lane (deployments, which build) run at once on this node' })
})
export type JobsConfig = Static<typeof JobsConfig>

export function parseJobsConfig (env: Env): JobsConfig {
  return {
    slots: integer(env, 'JOB_WORKER_SLOTS', 2, 1, 256),
    longSlots: integer(env, 'JOB_WORKER_LONG_SLOTS', 2, 1, 256)
  }
}
