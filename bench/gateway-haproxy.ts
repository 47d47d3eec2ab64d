import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * A reference, not a bar: HAProxy (a C reverse proxy, Debian's `haproxy`)
 * in front of the same app, one thread, connections to the app kept alive
 * and shared between clients. What it reaches on this machine is the most a
 * proxy process in front of this app can be expected to reach here.
 * Absent when the binary is not installed.
 */
export function haproxyInstalled (): boolean {
  return spawnSync('haproxy', ['-v'], { stdio: 'ignore' }).status === 0
}

async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

export async function startHaproxy (appPort: number): Promise<{ process: ChildProcess, port: number, stop: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-haproxy-'))
  const port = await freePort()
  const config = join(dir, 'haproxy.cfg')
  writeFileSync(config, [
    'global',
    '  nbthread 1',
    '  maxconn 4096',
    'defaults',
    '  mode http',
    '  option http-keep-alive',
    '  http-reuse always',
    '  timeout connect 5s',
    '  timeout client 30s',
    '  timeout server 30s',
    'frontend bench',
    `  bind 127.0.0.1:${port}`,
    '  default_backend app',
    'backend app',
    `  server hello 127.0.0.1:${appPort}`,
    ''
  ].join('\n'))
  const started = spawn('haproxy', ['-db', '-f', config], { stdio: ['ignore', 'ignore', 'inherit'] })
  // Ready once it accepts connections.
  for (let i = 0; i < 100; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/`, { headers: { host: 'hello.bench' } }).then(async (res) => { await res.arrayBuffer(); return true }, () => false)
    if (ok) break
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const stop = async (): Promise<void> => {
    if (started.exitCode === null) {
      started.kill('SIGTERM')
      await new Promise((resolve) => started.once('exit', resolve))
    }
    rmSync(dir, { recursive: true, force: true })
  }
  return { process: started, port, stop }
}
