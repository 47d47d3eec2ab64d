import { BuildFailedError } from '../runtime.js'

/** Anything a shell would interpret: such a command cannot be run as a plain argument list. */
const SHELL_SYNTAX = /[$`|&;<>()*?[\]{}~'"\\#!]/

/**
 * The `web:` line of a Procfile as an argument list, or null without one.
 * Commands are split on whitespace and never handed to a shell; one that needs
 * shell syntax is refused with the character that needs it.
 */
export function procfileCommand (procfile: string): string[] | null {
  const line = procfile.split(/\r?\n/).find(entry => /^web\s*:/.test(entry))
  if (line === undefined) return null
  const command = line.slice(line.indexOf(':') + 1).trim()
  const syntax = SHELL_SYNTAX.exec(command)
  if (syntax !== null) {
    throw new BuildFailedError(`The Procfile's web command needs a shell (it uses ${JSON.stringify(syntax[0])}); write it as a plain command and read PORT from the environment`)
  }
  if (command === '') throw new BuildFailedError('The Procfile\'s web line has no command')
  return command.split(/\s+/)
}

export interface PackageJson {
  main?: unknown
  scripts?: Record<string, unknown>
}

/**
 * How a Node app starts: `node <file>` directly when that is all its start
 * script says (one process fewer, and signals reach the app itself), else
 * `npm start`, else its `main`, else `server.js`.
 */
export function nodeStartCommand (pkg: PackageJson, hasServerJs: boolean): string[] | null {
  const start = pkg.scripts?.start
  if (typeof start === 'string') {
    const direct = /^node\s+(\S+)$/.exec(start.trim())
    if (direct !== null && !SHELL_SYNTAX.test(direct[1])) return ['node', direct[1]]
    return ['npm', 'start']
  }
  if (typeof pkg.main === 'string' && pkg.main !== '') return ['node', pkg.main]
  return hasServerJs ? ['node', 'server.js'] : null
}
