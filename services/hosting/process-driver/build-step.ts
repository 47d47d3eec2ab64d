import type { Readable } from 'node:stream'
import { LineSplitter } from '../line-splitter.js'
import { BuildCanceledError, BuildFailedError, type LogSink } from '../runtime.js'
import type { Cgroup } from './cgroups.js'
import { spawnSandboxed, type SandboxHost } from './sandbox.js'

/** Lines of output a failed step's error carries. */
const TAIL_LINES = 10

export interface BuildStep {
  /** How the step is named in the log and in a failure, e.g. `npm ci`. */
  name: string
  argv: string[]
  cwd: string
  env: Record<string, string>
  writable: string[]
  hidden: string[]
  cgroup: Cgroup | null
}

/**
 * Runs one build step in the sandbox, its output streamed to the log line by
 * line. Aborting kills the step's whole process group (and cgroup) and
 * rejects with BuildCanceledError; a non-zero exit rejects with
 * BuildFailedError naming the step, the code and the last lines.
 */
export async function runBuildStep (host: SandboxHost, step: BuildStep, log: LogSink, signal: AbortSignal): Promise<void> {
  if (signal.aborted) throw new BuildCanceledError()
  log.write(`$ ${step.name}`, 'system')
  const child = await spawnSandboxed(host, { ...step, readOnly: [], stdout: 'pipe', stderr: 'pipe' })
  const tail: string[] = []
  const follow = (stream: Readable, name: 'stdout' | 'stderr') => {
    const lines = new LineSplitter(line => {
      log.write(line, name)
      tail.push(line)
      if (tail.length > TAIL_LINES) tail.shift()
    })
    stream.setEncoding('utf8')
    stream.on('data', (text: string) => { lines.push(text) })
    stream.on('end', () => { lines.flush() })
  }
  follow(child.stdout as Readable, 'stdout')
  follow(child.stderr as Readable, 'stderr')
  const kill = () => {
    try { process.kill(-(child.pid as number), 'SIGKILL') } catch { /* already gone */ }
    void step.cgroup?.members().then(pids => { for (const pid of pids) { try { process.kill(pid, 'SIGKILL') } catch { /* gone */ } } })
  }
  signal.addEventListener('abort', kill, { once: true })
  const [code, killedBy] = await new Promise<[number | null, NodeJS.Signals | null]>(resolve => child.once('close', (code, killed) => resolve([code, killed])))
  signal.removeEventListener('abort', kill)
  if (signal.aborted) throw new BuildCanceledError()
  if (code !== 0) {
    const how = code === null ? `was killed by ${killedBy as string}` : `exited with code ${code}`
    throw new BuildFailedError(`${step.name} ${how}${tail.length > 0 ? `:\n${tail.join('\n')}` : ''}`)
  }
}
