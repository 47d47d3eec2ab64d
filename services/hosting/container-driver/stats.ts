import type Docker from 'dockerode'
import type { InstanceStats } from '../runtime.js'
import { isNotFound } from './engine.js'

/** One sample of the engine's stats: total CPU time (reported in nanoseconds) and memory in use. */
export async function sampleStats (container: Docker.Container): Promise<InstanceStats | null> {
  try {
    const stats = await container.stats({ stream: false, 'one-shot': true })
    return { cpuSeconds: (stats.cpu_stats?.cpu_usage?.total_usage ?? 0) / 1e9, memoryBytes: stats.memory_stats?.usage ?? 0 }
  } catch (error) {
    if (isNotFound(error)) return null
    throw error
  }
}
