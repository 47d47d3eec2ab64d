import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import Database from 'better-sqlite3'

// Where Debian's pdns-backend-sqlite3 puts the schema (`dpkg -L pdns-backend-sqlite3`).
const SCHEMAS = ['/usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql', '/usr/share/doc/pdns-backend-sqlite3/schema.sqlite3.sql']

export interface PowerDns { dnsPort: number, apiUrl: string, apiKey: string, stop: () => Promise<void> }

async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/**
 * A real PowerDNS Authoritative server on loopback: its own config dir, a
 * gsqlite3 database made from the package's schema, the HTTP API on, in the
 * foreground. Tests turn its caches off so each answer reflects the last
 * change; the bench keeps PowerDNS's defaults, as deployed.
 */
export async function startPowerDns (dir: string, options: { caches?: boolean } = {}): Promise<PowerDns> {
  const schema = SCHEMAS.find((path) => existsSync(path))
  if (schema === undefined) throw new Error('pdns-backend-sqlite3 is not installed (see .ci/run)')
  const database = join(dir, 'pdns.sqlite3')
  const db = new Database(database)
  db.exec(readFileSync(schema, 'utf8'))
  db.close()
  const dnsPort = await freePort()
  const apiPort = await freePort()
  const apiKey = randomBytes(16).toString('hex')
  writeFileSync(join(dir, 'pdns.conf'), [
    'launch=gsqlite3', `gsqlite3-database=${database}`,
    'api=yes', `api-key=${apiKey}`, 'webserver=yes', 'webserver-address=127.0.0.1', `webserver-port=${apiPort}`, 'webserver-allow-from=127.0.0.0/8',
    'local-address=127.0.0.1', `local-port=${dnsPort}`, 'daemon=no', 'guardian=no', `socket-dir=${dir}`,
    ...(options.caches === true ? [] : ['cache-ttl=0', 'negquery-cache-ttl=0', 'query-cache-ttl=0', 'zone-cache-refresh-interval=0', 'consistent-backends=yes', 'distributor-threads=1']),
    'disable-syslog=yes', 'loglevel=3', ''
  ].join('\n'))
  const child: ChildProcess = spawn('pdns_server', [`--config-dir=${dir}`], { stdio: ['ignore', 'ignore', 'pipe'] })
  let log = ''
  child.stderr?.on('data', (chunk: Buffer) => { log = (log + chunk.toString()).slice(-4000) })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const apiUrl = `http://127.0.0.1:${apiPort}`
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) throw new Error(`pdns_server exited: ${log}`)
    try {
      const res = await fetch(`${apiUrl}/api/v1/servers/localhost`, { headers: { 'x-api-key': apiKey } })
      if (res.ok) break
    } catch {}
    if (attempt > 100) throw new Error(`pdns_server did not start: ${log}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return {
    dnsPort,
    apiUrl,
    apiKey,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM')
      await exited
    }
  }
}
