import { spawn } from 'node:child_process'
import { writeFileSync, readFileSync } from 'node:fs'
import { request } from 'node:https'
import { createServer } from 'node:net'
import { join } from 'node:path'
import type { Test } from 'tap'
import { tempDir, throwawayCertificate } from '../../helper.js'

/** A port nobody holds right now, for a peer that cannot be told to take port 0. */
export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** GET over HTTPS trusting only `ca`; the body as text. */
export async function httpsGet (url: string, ca: string): Promise<{ status: number, body: string }> {
  return await new Promise((resolve, reject) => {
    const req = request(url, { ca, timeout: 5000 }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }))
    })
    req.on('timeout', () => req.destroy(new Error(`timed out: ${url}`)))
    req.on('error', reject)
    req.end()
  })
}

/** A throwaway CA and a certificate for 127.0.0.1 and localhost, for pebble's own HTTPS listeners. */
async function listenerCertificate (dir: string): Promise<{ ca: string, cert: string, key: string }> {
  const { caFile, certFile, keyFile } = await throwawayCertificate(dir, 'plinth test ACME listener CA', ['IP:127.0.0.1', 'DNS:localhost'])
  return { ca: readFileSync(caFile, 'utf8'), cert: certFile, key: keyFile }
}

export interface Pebble {
  directoryUrl: string
  /** The CA that signed pebble's listener certificate: what the ACME client must trust. */
  listenerCa: string
  /** The root pebble issues under, from its management interface. */
  issuingRoot: () => Promise<string>
  /** Everything pebble printed, for failure messages. */
  output: () => string
}

/**
 * Debian's pebble on free ports: it validates HTTP-01 on `httpPort` of
 * whatever address the hostname resolves to, and asks `dnsPort` (the
 * built-in DNS server) for every lookup. Stopped when the test ends.
 */
export async function startPebble (t: Test, options: { httpPort: number, dnsPort: number }): Promise<Pebble> {
  const dir = tempDir(t, 'plinth-pebble-')
  const listener = await listenerCertificate(dir)
  const [acmePort, managementPort, tlsPort] = [await freePort(), await freePort(), await freePort()]
  const config = join(dir, 'pebble-config.json')
  writeFileSync(config, JSON.stringify({
    pebble: {
      listenAddress: `127.0.0.1:${acmePort}`,
      managementListenAddress: `127.0.0.1:${managementPort}`,
      certificate: listener.cert,
      privateKey: listener.key,
      httpPort: options.httpPort,
      tlsPort,
      ocspResponderURL: '',
      externalAccountBindingRequired: false
    }
  }))
  let output = ''
  const child = spawn('pebble', ['-config', config, '-dnsserver', `127.0.0.1:${options.dnsPort}`], {
    env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_VA_ALWAYS_VALID: '0', PEBBLE_WFE_NONCEREJECT: '0', PEBBLE_AUTHZREUSE: '0' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.on('error', (error) => { output += `could not run pebble: ${error.message}\n` })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  t.teardown(async () => {
    child.kill('SIGTERM')
    await exited
  })
  const directoryUrl = `https://127.0.0.1:${acmePort}/dir`
  for (let attempt = 0; ; attempt++) {
    const answer = await httpsGet(directoryUrl, listener.ca).catch(() => null)
    if (answer?.status === 200) break
    if (attempt >= 100 || child.exitCode !== null) throw new Error(`pebble did not start:\n${output}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return {
    directoryUrl,
    listenerCa: listener.ca,
    issuingRoot: async () => (await httpsGet(`https://127.0.0.1:${managementPort}/roots/0`, listener.ca)).body,
    output: () => output
  }
}
