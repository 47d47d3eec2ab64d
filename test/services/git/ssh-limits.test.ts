import t from 'tap'
import { execFile, execFileSync } from 'node:child_process'
import { connect, type Socket } from 'node:net'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildTestApp, call, signUp, tempDir, type TestApp } from '../../helper.js'

interface Run { code: number | null, stderr: string }

/** OpenSSH's client, isolated from the machine's configuration; `-b` picks the source address (all of 127/8 is local). */
function sshClient (app: TestApp, home: string) {
  return async (options: { keys: string[], from?: string, command?: string, extra?: string[] }): Promise<Run> => await new Promise((resolve) => {
    const args = [
      ...options.keys.flatMap((key) => ['-i', key]),
      '-F', '/dev/null', '-p', String(app.git.sshPort()), '-b', options.from ?? '127.0.0.1',
      '-o', 'IdentitiesOnly=yes', '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null',
      ...(options.extra ?? []), 'git@127.0.0.1', ...(options.command === undefined ? [] : [options.command])
    ]
    execFile('ssh', args, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home } }, (error, _stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stderr })
    })
  })
}

function keygen (home: string, name: string): string {
  const file = join(home, name)
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', file])
  return file
}

/** A raw TCP connection from `from`; resolves once the server has spoken (it was admitted) or closed it (it was not). */
async function rawConnection (app: TestApp, from: string): Promise<{ socket: Socket, admitted: boolean }> {
  const socket = connect({ host: '127.0.0.1', port: app.git.sshPort() as number, localAddress: from })
  const admitted = await new Promise<boolean>((resolve) => {
    socket.once('data', () => { resolve(true) })
    socket.once('close', () => { resolve(false) })
    socket.on('error', () => {})
  })
  return { socket, admitted }
}

/** A raw connection that is admitted, once the server has counted out the connections that just closed. */
async function admittedConnection (app: TestApp, from: string): Promise<Socket> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const { socket, admitted } = await rawConnection(app, from)
    if (admitted) return socket
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`no connection from ${from} was admitted`)
}

t.test('connections are capped in all and per address, and failed sign-ins per connection', async (t) => {
  const app = await buildTestApp(t, { env: { GIT_SSH_PORT: '0', GIT_SSH_MAX_CONNECTIONS: '2', GIT_SSH_MAX_CONNECTIONS_PER_ADDRESS: '1', GIT_SSH_MAX_AUTH_ATTEMPTS: '2' } })
  const home = tempDir(t, 'plinth-ssh-home-')
  const ssh = sshClient(app, home)
  const user = await signUp(app, 'dev@example.com')
  const known = keygen(home, 'known')
  await call(app, 'POST', '/api/auth/ssh-keys', user.auth, { title: 'known', key: readFileSync(`${known}.pub`, 'utf8') })
  const whoami = { keys: [known], command: 'whoami' }

  const first = await rawConnection(app, '127.0.0.1')
  t.ok(first.admitted, 'a first connection from an address is admitted')
  const same = await ssh({ ...whoami, from: '127.0.0.1' })
  t.equal(same.code, 255)
  t.match(same.stderr, /Connection closed|Connection reset|kex_exchange_identification/, 'a second from the same address is closed before the handshake')
  const elsewhere = await ssh({ ...whoami, from: '127.0.0.2' })
  t.equal(elsewhere.code, 128, 'another address signs in (and is told the command is no git command)')
  t.match(elsewhere.stderr, /only git clone, fetch and push/)
  const second = await admittedConnection(app, '127.0.0.2')
  const third = await ssh({ ...whoami, from: '127.0.0.3' })
  t.match(third.stderr, /Connection closed|Connection reset|kex_exchange_identification/, 'past the cap in all, a third address is closed too')
  t.notOk((await rawConnection(app, '127.0.0.4')).admitted)
  first.socket.destroy()
  second.destroy()
  // The server counts a connection out when its socket closes, a moment after the client's; the next one waits for that.
  let again: Run = { code: null, stderr: '' }
  for (let attempt = 0; attempt < 50 && again.code !== 128; attempt++) {
    again = await ssh({ ...whoami, from: '127.0.0.1' })
    if (again.code !== 128) await new Promise((resolve) => setTimeout(resolve, 100))
  }
  t.equal(again.code, 128, 'connections closed free their places')

  const strangers = [keygen(home, 'a'), keygen(home, 'b'), keygen(home, 'c')]
  const tries = await ssh({ keys: strangers, command: 'whoami', extra: ['-v'] })
  t.equal(tries.code, 255)
  t.equal(tries.stderr.match(/Offering public key/g)?.length, 2, 'the connection ends after two failed attempts: the third key is never offered')
  t.notMatch(tries.stderr, /Permission denied/)
  const withKnownLast = await ssh({ keys: [strangers[0], known], command: 'whoami' })
  t.equal(withKnownLast.code, 128, 'one failure and then a good key signs in')
})

t.test('a connection that does not sign in in time, or sits idle, is closed', async (t) => {
  const app = await buildTestApp(t, { env: { GIT_SSH_PORT: '0', GIT_SSH_AUTH_TIMEOUT_SECONDS: '1', GIT_SSH_IDLE_TIMEOUT_SECONDS: '1' } })
  const home = tempDir(t, 'plinth-ssh-home-')
  const ssh = sshClient(app, home)
  const silent = await rawConnection(app, '127.0.0.1')
  t.ok(silent.admitted)
  await new Promise<void>((resolve) => { silent.socket.once('close', () => { resolve() }) })
  t.pass('a client that never speaks is closed after the sign-in timeout')
  const talking = await rawConnection(app, '127.0.0.1')
  talking.socket.write('SSH-2.0-Slow_0.1\r\n')
  await new Promise<void>((resolve) => { talking.socket.once('close', () => { resolve() }) })
  t.pass('so is one that starts the handshake and stalls')

  const user = await signUp(app, 'dev@example.com')
  const key = keygen(home, 'dev')
  await call(app, 'POST', '/api/auth/ssh-keys', user.auth, { title: 'dev', key: readFileSync(`${key}.pub`, 'utf8') })
  const strangers = [keygen(home, 'a'), keygen(home, 'b'), keygen(home, 'c')]
  const tries = await ssh({ keys: strangers, command: 'whoami', extra: ['-v'] })
  t.equal(tries.stderr.match(/Offering public key/g)?.length, 3, 'by default six attempts are allowed: every key is offered')
  t.match(tries.stderr, /Permission denied \(publickey\)/)
  const idle = await ssh({ keys: [key], extra: ['-N'] })
  t.equal(idle.code, 255)
  t.match(idle.stderr, /Received disconnect|closed by remote host/, 'a signed-in connection running nothing is closed once idle')
})
