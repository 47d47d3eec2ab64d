import t from 'tap'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { AppError } from '../../../services/platform/errors.js'
import { parseSshPublicKey } from '../../../services/identity/ssh-key-format.js'

const run = promisify(execFile)
const dir = mkdtempSync(join(tmpdir(), 'plinth-ssh-keys-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

interface Generated { name: string, type: string, algorithm: string, comment: string, line: string, file: string }

const specs = [
  { name: 'ed25519', args: ['-t', 'ed25519'], type: 'ssh-ed25519', algorithm: 'ed25519' },
  { name: 'ecdsa256', args: ['-t', 'ecdsa', '-b', '256'], type: 'ecdsa-sha2-nistp256', algorithm: 'ecdsa' },
  { name: 'ecdsa384', args: ['-t', 'ecdsa', '-b', '384'], type: 'ecdsa-sha2-nistp384', algorithm: 'ecdsa' },
  { name: 'ecdsa521', args: ['-t', 'ecdsa', '-b', '521'], type: 'ecdsa-sha2-nistp521', algorithm: 'ecdsa' },
  { name: 'rsa2048', args: ['-t', 'rsa', '-b', '2048'], type: 'ssh-rsa', algorithm: 'rsa' },
  { name: 'rsa4096', args: ['-t', 'rsa', '-b', '4096'], type: 'ssh-rsa', algorithm: 'rsa' },
  { name: 'rsa1024', args: ['-t', 'rsa', '-b', '1024'], type: 'ssh-rsa', algorithm: 'rsa' }
]

// Generated once, in parallel: RSA 4096 dominates the run time.
const generated: Record<string, Generated> = Object.fromEntries(await Promise.all(specs.map(async (spec) => {
  const file = join(dir, spec.name)
  const comment = `${spec.name}@plinth test key`
  await run('ssh-keygen', ['-q', ...spec.args, '-N', '', '-C', comment, '-f', file])
  const line = readFileSync(`${file}.pub`, 'utf8')
  return [spec.name, { ...spec, comment, line, file }] as const
})))

/** `ssh-keygen -lf` prints `<bits> SHA256:<fp> <comment> (<TYPE>)`. */
async function keygenFingerprint (pubFile: string): Promise<{ bits: number, fingerprint: string }> {
  const { stdout } = await run('ssh-keygen', ['-l', '-E', 'sha256', '-f', pubFile])
  const match = /^(\d+) (SHA256:[A-Za-z0-9+/]+) /.exec(stdout)
  if (match === null) throw new Error(`unexpected ssh-keygen output: ${stdout}`)
  return { bits: Number(match[1]), fingerprint: match[2] }
}

const wireString = (value: Buffer | string): Buffer => {
  const bytes = Buffer.from(value)
  const length = Buffer.alloc(4)
  length.writeUInt32BE(bytes.length)
  return Buffer.concat([length, bytes])
}
const keyLine = (type: string, ...parts: Buffer[]): string => `${type} ${Buffer.concat(parts).toString('base64')}`
const blobOf = (line: string): Buffer => Buffer.from(line.split(' ')[1], 'base64')
/** Splits a generated key's blob back into its wire strings. */
const wireParts = (line: string): Buffer[] => {
  const blob = blobOf(line)
  const parts: Buffer[] = []
  for (let offset = 0; offset < blob.length; offset += 4 + blob.readUInt32BE(offset)) {
    parts.push(blob.subarray(offset + 4, offset + 4 + blob.readUInt32BE(offset)))
  }
  return parts
}

t.test('keys made by ssh-keygen parse with its fingerprint and bit count', async (t) => {
  for (const name of ['ed25519', 'ecdsa256', 'ecdsa384', 'ecdsa521', 'rsa2048', 'rsa4096']) {
    const key = generated[name]
    const expected = await keygenFingerprint(`${key.file}.pub`)
    const parsed = parseSshPublicKey(key.line)
    t.same(parsed, {
      type: key.type,
      algorithm: key.algorithm,
      bits: expected.bits,
      comment: key.comment,
      fingerprint: expected.fingerprint,
      canonical: key.line.split(' ').slice(0, 2).join(' ')
    }, name)
  }
})

t.test('whitespace and comments', async (t) => {
  const { line } = generated.ed25519
  const [type, base64] = line.trim().split(' ')
  const plain = parseSshPublicKey(`${type} ${base64}`)
  t.equal(plain.comment, null, 'no comment')
  t.equal(parseSshPublicKey(`  \t${type}\t${base64}   laptop  key \r\n`).comment, 'laptop  key', 'inner spacing kept, ends trimmed')
  t.equal(parseSshPublicKey(`${type} ${base64} other@host`).canonical, plain.canonical, 'canonical ignores the comment')
  t.equal(parseSshPublicKey(`${type} ${base64} other@host`).fingerprint, plain.fingerprint)
})

t.test('refusals', async (t) => {
  const ed = generated.ed25519.line.trim()
  const [edType, edBase64] = ed.split(' ')
  const [, edKey] = wireParts(ed)
  const [ecType, ecCurve, ecPoint] = wireParts(generated.ecdsa256.line)
  const offCurve = Buffer.from(ecPoint)
  offCurve[offCurve.length - 1] ^= 1
  const compressed = Buffer.concat([Buffer.from([0x02 + (ecPoint[64] & 1)]), ecPoint.subarray(1, 33)])
  const modulus = wireParts(generated.rsa2048.line)[2]
  const rsa = (exponent: Buffer, n = modulus): string => keyLine('ssh-rsa', wireString('ssh-rsa'), wireString(exponent), wireString(n))
  const { stdout: rfc4716 } = await run('ssh-keygen', ['-e', '-f', `${generated.ed25519.file}.pub`])
  const { stdout: pem } = await run('ssh-keygen', ['-e', '-m', 'PKCS8', '-f', `${generated.ecdsa256.file}.pub`])

  const cases: Array<[string, string, RegExp]> = [
    ['rsa 1024', generated.rsa1024.line, /at least 2048 bits; this one has 1024/],
    ['rsa over 16384 bits', rsa(Buffer.from([1, 0, 1]), Buffer.concat([Buffer.from([0x7f]), randomBytes(2048), Buffer.from([1])])), /at most 16384 bits/],
    ['rsa even exponent', rsa(Buffer.from([1, 0, 0])), /exponent must be odd/],
    ['rsa exponent 1', rsa(Buffer.from([1])), /exponent must be odd, at least 3/],
    ['rsa even modulus', rsa(Buffer.from([1, 0, 1]), Buffer.concat([modulus.subarray(0, -1), Buffer.from([2])])), /modulus is even/],
    ['rsa negative modulus', rsa(Buffer.from([1, 0, 1]), modulus.subarray(1)), /negative/],
    ['dsa', keyLine('ssh-dss', wireString('ssh-dss'), ...[128, 20, 128, 128].map((n) => wireString(randomBytes(n)))), /DSA keys \(ssh-dss\)/],
    ['certificate', keyLine('ssh-ed25519-cert-v01@openssh.com', wireString('ssh-ed25519-cert-v01@openssh.com'), wireString(randomBytes(32))), /certificates \(ssh-ed25519-cert-v01@openssh.com\)/],
    ['security key', keyLine('sk-ssh-ed25519@openssh.com', wireString('sk-ssh-ed25519@openssh.com'), wireString(edKey), wireString('ssh:')), /Security-key.*sk-ssh-ed25519@openssh.com/],
    ['unknown type', keyLine('ssh-foo', wireString('ssh-foo')), /type "ssh-foo" is not supported/],
    ['truncated base64', `${edType} ${edBase64.slice(0, -7)}`, /not valid base64/],
    ['truncated blob', `${edType} ${edBase64.slice(0, -8)}`, /ends before its Ed25519 public key/],
    ['url-safe base64', `${edType} ${edBase64.slice(0, -1)}-`, /not valid base64/],
    ['stray characters in base64', `${edType} ${edBase64.slice(0, 8)}*${edBase64.slice(9)}`, /not valid base64/],
    ['no key data', edType, /no key data/],
    ['inner type differs', `ssh-rsa ${edBase64}`, /for "ssh-ed25519" but the line declares ssh-rsa/],
    ['trailing bytes', keyLine(edType, blobOf(ed), Buffer.from([0, 0, 0, 0])), /unexpected bytes after the key/],
    ['ed25519 key of 31 bytes', keyLine(edType, wireString(edType), wireString(edKey.subarray(1))), /32 bytes; this one has 31/],
    ['ecdsa wrong curve name', keyLine(ecType.toString(), wireString(ecType), wireString('nistp384'), wireString(ecPoint)), /names curve "nistp384" instead of nistp256/],
    ['ecdsa point off the curve', keyLine(ecType.toString(), wireString(ecType), wireString(ecCurve), wireString(offCurve)), /not on the nistp256 curve/],
    ['ecdsa compressed point', keyLine(ecType.toString(), wireString(ecType), wireString(ecCurve), wireString(compressed)), /uncompressed nistp256 point of 65 bytes/],
    ['garbage text', 'hello, this is not a key!', /does not look like an SSH public key/],
    ['non-breaking space separator', `${edType}\u00a0${edBase64}`, /does not look like an SSH public key/],
    ['empty string', '', /empty/],
    ['only whitespace', ' \n\t ', /empty/],
    ['private key', readFileSync(generated.ed25519.file, 'utf8'), /private key/],
    ['PuTTY private key', 'PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n', /private key/],
    ['RFC 4716 public key', rfc4716, /RFC 4716.*ssh-keygen -i/],
    ['PEM public key', pem, /PEM keys are not accepted/],
    ['two keys on two lines', `${ed}\n${generated.ecdsa256.line}`, /exactly one SSH public key/],
    ['options prefix', `no-pty,command="echo hi" ${ed}`, /Remove the authorized_keys options/],
    ['single option prefix', `restrict ${ed}`, /Remove the authorized_keys options/],
    ['control characters in the comment', `${ed} bob\x1b[31m`, /control characters/],
    ['too long', `${ed} ${'x'.repeat(16 * 1024)}`, /too long/]
  ]
  for (const [name, text, message] of cases) {
    t.throws(() => parseSshPublicKey(text), { name: 'AppError', code: 'APP_INVALID_SSH_KEY', status: 400, message }, name)
  }
  t.ok((() => { try { parseSshPublicKey('') } catch (error) { return error instanceof AppError } })(), 'an AppError')
})
