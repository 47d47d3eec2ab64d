import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { chmod, mkdtemp, mkdir, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import type { BuildInput, LogSink, LogStream, SourceKind } from '../../../services/hosting/runtime.js'

export const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '../../fixtures/hosting')

/** A LogSink that keeps every line, so tests can wait for one. */
export class Lines implements LogSink {
  readonly lines: Array<{ line: string, stream: LogStream }> = []
  write (line: string, stream: LogStream): void { this.lines.push({ line, stream }) }
  has (pattern: RegExp, stream?: LogStream): boolean {
    return this.lines.some(entry => pattern.test(entry.line) && (stream === undefined || entry.stream === stream))
  }

  async waitFor (pattern: RegExp, stream?: LogStream): Promise<void> {
    while (!this.has(pattern, stream)) await sleep(20)
  }
}

export async function until (condition: () => boolean | Promise<boolean>): Promise<void> {
  while (!await condition()) await sleep(20)
}

export async function tempDir (prefix: string, mode = 0o700): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  await chmod(dir, mode)
  return dir
}

const sources = mkdtempSync(join(tmpdir(), 'plinth-sources-'))
t.teardown(() => rmSync(sources, { recursive: true, force: true }))

/** Writes a throwaway source tree: path → contents. */
export async function sourceTree (files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(sources, 'source-'))
  for (const [path, contents] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true })
    await writeFile(join(dir, path), contents)
  }
  return dir
}

/**
 * The test runner rides along into every spawned node: tap's process-info hook
 * (in NODE_OPTIONS) and c8's NODE_V8_COVERAGE (which Node hands to children)
 * both write files at exit, under directories a sandbox has read-only.
 * Pointing them at the sandbox's private /tmp keeps the apps' own output and
 * exit codes what they are outside the test runner.
 */
export const TEST_ENV = { _TAPJS_PROCESSINFO_CWD_: '/tmp', NODE_V8_COVERAGE: '/tmp/plinth-v8-coverage' }

export function buildInput (sourceDir: string, kind: SourceKind | 'auto' = 'auto', signal: AbortSignal = new AbortController().signal, log = new Lines()): BuildInput & { log: Lines } {
  return { appId: 'app1', deploymentId: 'dep1', sourceDir, kind, env: { ...TEST_ENV }, log, signal }
}

export async function get (port: number, path = '/'): Promise<{ status: number, body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`)
  return { status: response.status, body: await response.text() }
}
