import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { stringify } from 'yaml'
import { buildApp } from '../app.js'
import { loadConfig } from '../services/config.js'

export const OPENAPI_FILE = resolve(fileURLToPath(new URL('..', import.meta.url)), 'openapi.yaml')

/** The contract as YAML, generated from the registered route schemas of the real app. */
export async function renderOpenApi (): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'plinth-openapi-'))
  try {
    const app = await buildApp(loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dataDir }))
    await app.ready()
    // Written out in full: shared values (a tag list, a security requirement) would otherwise become YAML anchors and aliases.
    const yaml = stringify(app.swagger(), { aliasDuplicateObjects: false })
    await app.close()
    return yaml
  } finally {
    rmSync(dataDir, { recursive: true, force: true })
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  writeFileSync(OPENAPI_FILE, await renderOpenApi())
  console.log(`wrote ${OPENAPI_FILE}`)
}
