import { spawn } from 'node:child_process'
import { once } from 'node:events'

/**
 * A generated history for the git rows: `commits` commits on `main`, each
 * changing a few lines of two or three of a handful of source files, written
 * by one `git fast-import` (2,000 `git commit` processes would take minutes),
 * then repacked as a served repository would be after its first gc.
 */
const FILES = ['README.md', 'src/app.ts', 'src/routes.ts', 'src/store.ts', 'src/util.ts', 'test/app.test.ts', 'docs/guide.md', 'package.json']
const LINES = 120

/** The same pseudo-random sequence every run, so every run serves the same repository. */
function random (seed: number): () => number {
  let state = seed
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648
    return state / 2147483648
  }
}

function * stream (commits: number): Generator<string> {
  const next = random(17)
  const files = FILES.map((file) => Array.from({ length: LINES }, (_, i) => `${file} line ${i}: ${'x'.repeat(20 + (i % 30))}`))
  const start = 1_700_000_000
  for (let n = 1; n <= commits; n++) {
    const when = `${start + n * 600} +0000`
    const message = `change ${n}\n`
    yield `commit refs/heads/main\nmark :${n}\nauthor Bench <bench@example.com> ${when}\ncommitter Bench <bench@example.com> ${when}\ndata ${Buffer.byteLength(message)}\n${message}`
    if (n > 1) yield `from :${n - 1}\n`
    const touched = n === 1 ? FILES.map((_, i) => i) : [Math.floor(next() * FILES.length), Math.floor(next() * FILES.length)]
    for (const index of new Set(touched)) {
      const lines = files[index]
      for (let edit = 0; edit < 3; edit++) lines[Math.floor(next() * lines.length)] = `${FILES[index]} edit ${n}.${edit}: ${next().toString(36)}`
      if (next() < 0.2) lines.push(`${FILES[index]} added in ${n}`)
      const content = `${lines.join('\n')}\n`
      yield `M 100644 inline ${FILES[index]}\ndata ${Buffer.byteLength(content)}\n${content}`
    }
    yield '\n'
  }
}

async function git (gitDir: string, args: string[], input?: Iterable<string>): Promise<void> {
  const child = spawn('git', [`--git-dir=${gitDir}`, ...args], { stdio: ['pipe', 'ignore', 'inherit'] })
  if (input !== undefined) {
    for (const chunk of input) {
      if (!child.stdin.write(chunk)) await once(child.stdin, 'drain')
    }
  }
  child.stdin.end()
  const [code] = await once(child, 'close') as [number | null]
  if (code !== 0) throw new Error(`git ${args[0]} exited ${code}`)
}

/** Writes the history into an existing bare repository (as the service made it) and repacks it. */
export async function importHistory (gitDir: string, commits: number): Promise<void> {
  await git(gitDir, ['fast-import', '--quiet'], stream(commits))
  await git(gitDir, ['repack', '-a', '-d', '-q'])
}

export const BENCH_FILES = FILES
