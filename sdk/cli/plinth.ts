/**
 * The `plinth` command. Today: `plinth gen types --project <id>`, which reads
 * a project's collection definitions from a running server (with a personal
 * access token) and writes their TypeScript record types.
 */
import { writeFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { createAdmin } from '../admin/index.js'
import { PlinthError } from '../core/errors.js'
import { renderCollectionTypes } from './gen-types.js'

const USAGE = `usage: plinth gen types --project <id> [--url <server>] [--token <PAT>] [--out <file.ts>]
  --url    the server (default $PLINTH_URL, else http://127.0.0.1:8080)
  --token  a personal access token or platform JWT (default $PLINTH_TOKEN)
  --out    where to write (default: standard output)`

export async function main (argv: string[], env: Record<string, string | undefined> = process.env): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { project: { type: 'string' }, url: { type: 'string' }, token: { type: 'string' }, out: { type: 'string' }, help: { type: 'boolean' } }
  })
  if (values.help === true || positionals.join(' ') !== 'gen types' || values.project === undefined) {
    process.stderr.write(`${USAGE}\n`)
    return values.help === true ? 0 : 2
  }
  const token = values.token ?? env.PLINTH_TOKEN
  if (token === undefined || token === '') {
    process.stderr.write('plinth: give a token with --token or PLINTH_TOKEN\n')
    return 2
  }
  const admin = createAdmin({ baseUrl: values.url ?? env.PLINTH_URL ?? 'http://127.0.0.1:8080', token })
  try {
    const definitions = await admin.collections.list(values.project)
    const source = renderCollectionTypes(values.project, definitions)
    if (values.out === undefined) process.stdout.write(source)
    else {
      await writeFile(values.out, source)
      process.stderr.write(`wrote ${values.out} (${definitions.length} collections)\n`)
    }
    return 0
  } catch (error) {
    if (!(error instanceof PlinthError)) throw error
    process.stderr.write(`plinth: ${error.status} ${error.code}: ${error.message}\n`)
    return 1
  }
}
