import { copyFile } from 'node:fs/promises'
import { buildApp } from './app.js'
import { loadConfig } from './services/config.js'
import { AppError } from './services/platform/errors.js'

/**
 * `npm run export -- --project <projectId> <file>` and
 * `npm run import -- --org <orgId> --as <email> <file>` (`node dist/project-archive-cli.js export|import …` in a built
 * install), on the store and directories the server's environment names (docs/export.md). The app is built but never
 * made ready, so no listener, job worker or background task starts beside a running server.
 */
const [command, ...args] = process.argv.slice(2)
const option = (name: string): string | undefined => { const at = args.indexOf(`--${name}`); return at === -1 ? undefined : args[at + 1] }
const file = args.find((arg, index) => !arg.startsWith('--') && (index === 0 || !args[index - 1].startsWith('--')))
const usage = 'usage: export --project <projectId> <file> | import --org <orgId> --as <email> <file>'
const wanted = command === 'export' ? option('project') : option('org')
if (file === undefined || wanted === undefined || (command !== 'export' && command !== 'import') || (command === 'import' && option('as') === undefined)) {
  console.error(usage)
  process.exit(64)
}
const app = await buildApp(loadConfig({ ...process.env, LOG_LEVEL: 'silent' }))
try {
  if (command === 'export') {
    const project = await app.projects.get(wanted)
    const { file: written, manifest, dispose } = await app.projectArchives.export(project)
    try { await copyFile(written, file) } finally { await dispose() }
    const { counts } = manifest
    console.log(`${project.name} exported to ${file}: ${counts.collections} collections, ${counts.records} records, ${counts.endUsers} end users, ` +
      `${counts.files} files, ${counts.repositories} repositories`)
  } else {
    const user = await app.identity.users.findByEmail(option('as') as string)
    if (user === null) throw new Error(`no platform user has the email ${option('as') as string}`)
    const { project, manifest, deployFailures } = await app.projectArchives.import(wanted, user.id, file)
    console.log(`imported as project ${project.id} (${project.slug}); set again here: ${manifest.leftOut.join('; ')}`)
    for (const failure of deployFailures) console.error(`app ${failure.app} was not deployed (${failure.code}): ${failure.message}`)
  }
} catch (error) {
  console.error(error instanceof AppError ? error.message : error)
  process.exitCode = 1
} finally {
  await app.close()
}
