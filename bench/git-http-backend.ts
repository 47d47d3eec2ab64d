import { spawn } from 'node:child_process'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { pipeline } from 'node:stream'

/**
 * The reference for the git rows: git's own smart-HTTP server, `git
 * http-backend`, run as a CGI by a bare Node HTTP server, one process per
 * request as a CGI web server runs it, over GIT_PROJECT_ROOT (the app's
 * GIT_REPOS_DIR, so it serves the very same bare repositories). Git gets the
 * same sealed environment the app gives it (no system or user config).
 */
const root = process.env.GIT_PROJECT_ROOT
if (root === undefined) throw new Error('GIT_PROJECT_ROOT is not set')
const HEADER_END = Buffer.from('\r\n\r\n')

function cgiEnv (request: IncomingMessage, url: URL): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    LC_ALL: 'C',
    GIT_PROJECT_ROOT: root as string,
    GIT_HTTP_EXPORT_ALL: '1',
    GATEWAY_INTERFACE: 'CGI/1.1',
    SERVER_PROTOCOL: `HTTP/${request.httpVersion}`,
    REQUEST_METHOD: request.method ?? 'GET',
    PATH_INFO: decodeURIComponent(url.pathname),
    QUERY_STRING: url.search.slice(1),
    REMOTE_ADDR: request.socket.remoteAddress ?? '127.0.0.1'
  }
  const headers: Array<[string, string | string[] | undefined]> = [
    ['CONTENT_TYPE', request.headers['content-type']],
    ['CONTENT_LENGTH', request.headers['content-length']],
    ['HTTP_CONTENT_ENCODING', request.headers['content-encoding']],
    ['GIT_PROTOCOL', request.headers['git-protocol']]
  ]
  for (const [name, value] of headers) if (typeof value === 'string') env[name] = value
  return env
}

/** Reads the CGI header block off git's output, answers with it, then streams the rest as the body. */
function respond (request: IncomingMessage, response: ServerResponse): void {
  const url = new URL(request.url ?? '/', 'http://localhost')
  const child = spawn('git', ['http-backend'], { env: cgiEnv(request, url), stdio: ['pipe', 'pipe', 'inherit'] })
  child.once('error', () => { response.destroy() })
  pipeline(request, child.stdin, () => {})
  let head = Buffer.alloc(0)
  const onData = (chunk: Buffer): void => {
    head = Buffer.concat([head, chunk])
    const end = head.indexOf(HEADER_END)
    if (end === -1) return
    child.stdout.off('data', onData)
    child.stdout.pause()
    let status = 200
    for (const headerLine of head.subarray(0, end).toString('latin1').split('\r\n')) {
      const colon = headerLine.indexOf(':')
      if (colon <= 0) continue
      const name = headerLine.slice(0, colon).trim()
      const value = headerLine.slice(colon + 1).trim()
      if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10)
      else response.setHeader(name, value)
    }
    response.writeHead(status)
    response.write(head.subarray(end + HEADER_END.length))
    pipeline(child.stdout, response, () => { if (child.exitCode === null) child.kill() })
  }
  child.stdout.on('data', onData)
  child.stdout.once('end', () => { if (!response.headersSent) response.writeHead(502).end() })
}

const server = createServer(respond)
server.listen(0, '127.0.0.1', () => {
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no TCP address')
  process.send?.({ address: `http://127.0.0.1:${address.port}` })
})
process.once('SIGTERM', () => { server.close(); process.exit(0) })
