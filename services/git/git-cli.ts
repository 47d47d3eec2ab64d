import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { AppError } from '../platform/errors.js'
import { gitErrors } from './errors.js'

/** What a git command printed, once it exited. */
export interface GitResult { stdout: Buffer, stderr: string, code: number }

export interface GitRunOptions {
  input?: string | Buffer
  env?: Record<string, string>
  /** Exit codes that are answers rather than failures (`merge-base --is-ancestor` answers 1). */
  okCodes?: number[]
  /** Past this many bytes of output the command is stopped and refused. */
  maxOutput?: number
}

const DEFAULT_MAX_OUTPUT = 64 * 1024 * 1024
const STDERR_KEPT = 8 * 1024
export const MIN_GIT_VERSION = [2, 38] as const

/**
 * The one way the server runs git: the binary with an argument array (never
 * a shell), against one repository by `--git-dir`, in an environment that
 * holds nothing of the server's own (no system or user config, no prompts,
 * no credentials), so a repository behaves the same on every host.
 */
export class GitCli {
  constructor (private readonly binary = 'git') {}

  env (extra: Record<string, string> = {}): Record<string, string> {
    return {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_TERMINAL_PROMPT: '0',
      LC_ALL: 'C',
      ...extra
    }
  }

  /** A running git command with its streams, for the transport, which pipes them. */
  spawn (gitDir: string | null, args: string[], env: Record<string, string> = {}): ChildProcessWithoutNullStreams {
    const full = gitDir === null ? args : [`--git-dir=${gitDir}`, ...args]
    const child = spawn(this.binary, full, { env: this.env(env), stdio: ['pipe', 'pipe', 'pipe'] })
    // A failed start (EAGAIN, EMFILE under load) is an 'error' event, which unheard would end the whole server; heard,
    // the child still closes with a negative code and empty output, which every caller already treats as git failing.
    child.once('error', () => {})
    return child
  }

  /** Runs to the end and collects the output; a failure is a 500 carrying git's words in the log only. */
  async run (gitDir: string | null, args: string[], options: GitRunOptions = {}): Promise<GitResult> {
    const child = this.spawn(gitDir, args, options.env)
    const chunks: Buffer[] = []
    let size = 0
    let stderr = ''
    let overflow = false
    const maxOutput = options.maxOutput ?? DEFAULT_MAX_OUTPUT
    child.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > maxOutput) { overflow = true; child.kill('SIGKILL'); return }
      chunks.push(chunk)
    })
    child.stderr.on('data', (chunk: Buffer) => { if (stderr.length < STDERR_KEPT) stderr += chunk.toString('utf8') })
    // git may exit before reading all of its input (a refused command); that is not our failure.
    child.stdin.on('error', () => {})
    child.stdin.end(options.input)
    const code = await new Promise<number>((resolve, reject) => {
      child.once('error', reject)
      child.once('close', (exitCode) => { resolve(exitCode ?? -1) })
    })
    if (overflow) throw gitErrors.outputTooLarge({ limit: maxOutput })
    const result = { stdout: Buffer.concat(chunks), stderr, code }
    if (code !== 0 && !(options.okCodes ?? []).includes(code)) throw new GitCommandError(args, result)
    return result
  }

  /** The installed version as [major, minor]. */
  async version (): Promise<[number, number]> {
    const { stdout } = await this.run(null, ['version'])
    const match = /git version (\d+)\.(\d+)/.exec(stdout.toString())
    if (match === null) throw new Error(`cannot read the git version from "${stdout.toString().trim()}"`)
    return [Number(match[1]), Number(match[2])]
  }
}

/** A git command that failed where it should not: an internal error, logged with git's own message. */
export class GitCommandError extends AppError {
  constructor (readonly args: string[], readonly result: GitResult) {
    const { code, status, message } = gitErrors.failed({ command: args[0] ?? '' })
    super(code, status, message)
  }

  override toString (): string {
    return `git ${this.args.join(' ')} exited ${this.result.code}: ${this.result.stderr.trim()}`
  }
}

export function versionAtLeast (version: [number, number], wanted: readonly [number, number] = MIN_GIT_VERSION): boolean {
  return version[0] > wanted[0] || (version[0] === wanted[0] && version[1] >= wanted[1])
}
