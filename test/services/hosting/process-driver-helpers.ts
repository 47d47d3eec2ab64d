import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { chmod, mkdtemp, mkdir, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { BuildInput, SourceKind } from '../../../services/hosting/runtime.js'
import { RecordingSink } from './driver-harness.js'

export const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '../../fixtures/hosting')

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

export function buildInput (sourceDir: string, kind: SourceKind | 'auto' = 'auto', signal: AbortSignal = new AbortController().signal, log = new RecordingSink()): BuildInput & { log: RecordingSink } {
  return { projectId: 'proj1', appId: 'app1', deploymentId: 'dep1', sourceDir, kind, env: { ...TEST_ENV }, log, signal }
}
