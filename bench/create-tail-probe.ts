import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks'
import { readFileSync } from 'node:fs'

/**
 * Preloaded into a bench server by bench/create-tail.ts: event-loop delay,
 * GC pauses and CPU (the main thread's from its task's stat, and the whole
 * process's) since the last ask, sent back over IPC when the parent asks.
 */
export const ASK = 'create-tail:stats'

const delay = monitorEventLoopDelay({ resolution: 1 })
delay.enable()
let pauses: number[] = []
new PerformanceObserver((list) => { for (const entry of list.getEntries()) pauses.push(entry.duration) }).observe({ entryTypes: ['gc'] })

function mainThreadCpuMs (): number {
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}
const processCpuMs = (): number => { const usage = process.cpuUsage(); return (usage.user + usage.system) / 1000 }

let mainFrom = mainThreadCpuMs()
let processFrom = processCpuMs()
process.on('message', (message) => {
  if (message !== ASK) return
  process.send?.({
    [ASK]: true,
    delayP99: delay.percentile(99) / 1e6,
    delayMax: delay.max / 1e6,
    gcs: pauses.length,
    gcMs: pauses.reduce((sum, pause) => sum + pause, 0),
    gcMax: Math.max(0, ...pauses),
    mainCpuMs: mainThreadCpuMs() - mainFrom,
    processCpuMs: processCpuMs() - processFrom
  })
  delay.reset()
  pauses = []
  mainFrom = mainThreadCpuMs()
  processFrom = processCpuMs()
})
