import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import type { Test } from 'tap'
import { tempDir, throwawayCertificate } from '../../helper.js'
import { gitClient } from '../git/fixtures.js'

/** A throwaway CA and a listener certificate for localhost, git.plinth.test (a name only a test's resolver knows), 127.0.0.1 and 127.0.0.2 under it. */
async function certificates (dir: string): Promise<{ caFile: string, cert: string, key: string }> {
  const { caFile, certFile, keyFile } = await throwawayCertificate(dir, 'plinth test git CA', ['DNS:localhost', 'DNS:git.plinth.test', 'IP:127.0.0.1', 'IP:127.0.0.2'])
  return { caFile, cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') }
}

/** Runs `git http-backend` as a CGI for one request and relays its answer. */
function httpBackend (root: string, request: IncomingMessage, response: ServerResponse): void {
  const url = new URL(request.url ?? '/', 'https://localhost')
  const child = spawn('git', ['http-backend'], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: '1',
      REQUEST_METHOD: request.method ?? 'GET',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.slice(1),
      CONTENT_TYPE: request.headers['content-type'] ?? '',
      ...(request.headers['git-protocol'] === undefined ? {} : { GIT_PROTOCOL: String(request.headers['git-protocol']) }),
      ...(request.headers['content-encoding'] === undefined ? {} : { HTTP_CONTENT_ENCODING: String(request.headers['content-encoding']) }),
      REMOTE_ADDR: request.socket.remoteAddress ?? ''
    },
    stdio: ['pipe', 'pipe', 'ignore']
  })
  request.pipe(child.stdin)
  let head = Buffer.alloc(0)
  let started = false
  child.stdout.on('data', (chunk: Buffer) => {
    if (started) { response.write(chunk); return }
    head = Buffer.concat([head, chunk])
    const end = head.indexOf('\r\n\r\n')
    if (end < 0) return
    started = true
    let status = 200
    for (const line of head.subarray(0, end).toString().split('\r\n')) {
      const colon = line.indexOf(':')
      const [name, value] = [line.slice(0, colon).trim(), line.slice(colon + 1).trim()]
      if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0])
      else response.setHeader(name, value)
    }
    response.writeHead(status)
    response.write(head.subarray(end + 4))
  })
  child.once('close', () => { response.end() })
}

export interface HttpsGit {
  port: number
  /** The PEM file of the CA that signed the server's certificate: HOSTING_GIT_CA_FILE. */
  caFile: string
  /** Requests the server received, by path. */
  seen: string[]
}

/**
 * A real git server over HTTPS on `host` (127.0.0.1 unless told): `git
 * http-backend` behind node:https, serving `site.git` (one commit of
 * `files`); with `redirectTo`, any path under `/moved/` answers a 302 to it
 * plus the rest of the path. Closed when the test ends.
 */
export async function httpsGit (t: Test, files: Record<string, string>, options: { host?: string, redirectTo?: string } = {}): Promise<HttpsGit> {
  const { host = '127.0.0.1', redirectTo } = options
  const dir = tempDir(t, 'plinth-https-git-')
  const { caFile, cert, key } = await certificates(dir)
  const client = gitClient(t)
  const work = await client.workTree('site', [files])
  const root = join(dir, 'repos')
  await client.run(['clone', '-q', '--bare', work, join(root, 'site.git')])
  const seen: string[] = []
  const server = createServer({ cert, key }, (request, response) => {
    seen.push(request.url ?? '')
    if (redirectTo !== undefined && request.url?.startsWith('/moved/') === true) {
      response.writeHead(302, { location: `${redirectTo}${request.url.slice('/moved'.length)}` }).end()
      return
    }
    httpBackend(root, request, response)
  })
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  t.teardown(async () => { await new Promise((resolve) => server.close(resolve)) })
  return { port: (server.address() as AddressInfo).port, caFile, seen }
}
