import t, { type Test } from 'tap'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { AppError } from '../../../services/platform/errors.js'
import {
  createSecretBox, deriveKey, generateToken, hashPassword, hashToken, loadMasterKey,
  masterKeyId, MASTER_KEY_FILE, passwordNeedsRehash, SecretBox, verifyPassword
} from '../../../services/platform/crypto.js'

const run = promisify(execFile)

function tempDir (t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-crypto-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

t.test('passwords', async (t) => {
  const hash = await hashPassword('correct horse battery staple')
  t.match(hash, /^\$argon2id\$v=19\$/, 'an argon2id PHC string')
  const params = Object.fromEntries(hash.split('$')[3].split(',').map((pair) => pair.split('=')))
  t.same(params, { m: '19456', t: '2', p: '1' }, 'the stated parameters: OWASP minimum or stronger')
  t.equal(await verifyPassword(hash, 'correct horse battery staple'), true)
  t.equal(await verifyPassword(hash, 'correct horse battery stapl'), false)
  t.not(await hashPassword('correct horse battery staple'), hash, 'salted: the same password hashes differently')
  t.equal(passwordNeedsRehash(hash), false)

  const weaker = hash.replace('m=19456', 'm=4096')
  t.equal(passwordNeedsRehash(weaker), true, 'weaker parameters ask for a rehash')
  for (const malformed of ['', 'plain', '$argon2id$garbage', weaker.slice(0, -10), '$2b$10$abcdefghijklmnopqrstuv']) {
    t.equal(await verifyPassword(malformed, 'x'), false, `malformed hash ${JSON.stringify(malformed.slice(0, 20))} is false, not a throw`)
  }
})

t.test('tokens', async (t) => {
  const plain = generateToken()
  t.match(plain, /^[A-Za-z0-9_-]{43}$/, '32 bytes as unpadded base64url')
  t.match(generateToken('plinth_pat'), /^plinth_pat_[A-Za-z0-9_-]{43}$/)
  t.match(generateToken(undefined, 16), /^[A-Za-z0-9_-]{22}$/)
  const many = new Set(Array.from({ length: 1000 }, () => generateToken()))
  t.equal(many.size, 1000, 'no repeats')
  t.throws(() => generateToken(undefined, 8), RangeError, 'too little entropy refused')
  t.throws(() => generateToken('bad prefix'), RangeError)

  const hash = hashToken(plain)
  t.match(hash, /^[0-9a-f]{64}$/)
  t.equal(hash, hashToken(plain), 'deterministic')
  t.equal(hashToken('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', 'SHA-256 test vector')
})

t.test('SecretBox', async (t) => {
  const key = randomBytes(32)
  const box = createSecretBox(key)
  t.ok(box instanceof SecretBox)

  for (const plaintext of ['sk-live-123', '', 'ünïcødé ✓ 🔑', 'x'.repeat(10_000)]) {
    t.equal(box.open(box.seal(plaintext)), plaintext, `round trip of ${plaintext.length} chars`)
  }
  const sealed = box.seal('client-secret', 'project:p1:oauth:github')
  t.match(sealed, /^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]+$/, 'v1.<iv>.<tag>.<ciphertext>')
  t.equal(box.open(sealed, 'project:p1:oauth:github'), 'client-secret')
  t.equal(new SecretBox(Buffer.from(key)).open(sealed, 'project:p1:oauth:github'), 'client-secret', 'same key, new instance')

  const ivs = new Set(Array.from({ length: 200 }, () => box.seal('same').split('.')[1]))
  t.equal(ivs.size, 200, 'a fresh IV every time')
  t.not(box.seal('same'), box.seal('same'), 'same plaintext seals differently')

  const rejected = { code: 'APP_SEALED_SECRET_REJECTED', status: 500 }
  const malformed = { code: 'APP_SEALED_SECRET_MALFORMED', status: 500 }
  t.throws(() => box.open(sealed, 'project:p2:oauth:github'), rejected, 'wrong associated data')
  t.throws(() => box.open(sealed), rejected, 'associated data missing')
  t.equal(box.open(box.seal('x')), 'x')
  t.throws(() => box.open(box.seal('x'), 'extra'), rejected, 'unexpected associated data')
  t.throws(() => createSecretBox(randomBytes(32)).open(sealed, 'project:p1:oauth:github'), rejected, 'wrong key')

  const [version, iv, tag, ciphertext] = sealed.split('.')
  const flip = (part: string, at = 0) => {
    const bytes = Buffer.from(part, 'base64url')
    bytes[at] ^= 1
    return bytes.toString('base64url')
  }
  const cases: Array<[string, string, { code: string, status: number }]> = [
    ['flipped ciphertext byte', [version, iv, tag, flip(ciphertext)].join('.'), rejected],
    ['flipped tag byte', [version, iv, flip(tag, 15), ciphertext].join('.'), rejected],
    ['flipped iv byte', [version, flip(iv, 11), tag, ciphertext].join('.'), rejected],
    ['truncated ciphertext', [version, iv, tag, ciphertext.slice(0, -2)].join('.'), rejected],
    ['truncated tag (short GCM tags refused)', [version, iv, tag.slice(0, 11), ciphertext].join('.'), malformed],
    ['short iv', [version, iv.slice(0, 8), tag, ciphertext].join('.'), malformed],
    ['unknown version', ['v2', iv, tag, ciphertext].join('.'), malformed],
    ['missing part', [version, iv, tag].join('.'), malformed],
    ['extra part', [sealed, 'x'].join('.'), malformed],
    ['not base64url', [version, iv, tag, ciphertext + '!'].join('.'), malformed],
    ['empty string', '', malformed]
  ]
  for (const [name, tampered, expected] of cases) {
    t.throws(() => box.open(tampered, 'project:p1:oauth:github'), expected, name)
  }
  try {
    box.open([version, iv, tag, flip(ciphertext)].join('.'), 'project:p1:oauth:github')
    t.fail('tampered secret opened')
  } catch (error) {
    t.ok(error instanceof AppError, 'a coded AppError')
    t.notMatch((error as Error).message, /client-secret/, 'the message leaks nothing')
  }

  t.throws(() => new SecretBox(randomBytes(16)), RangeError, 'a short master key is refused')
})

t.test('deriveKey separates purposes', async (t) => {
  const master = randomBytes(32)
  t.equal(deriveKey(master, 'a').length, 32)
  t.same(deriveKey(master, 'a'), deriveKey(master, 'a'))
  t.notSame(deriveKey(master, 'a'), deriveKey(master, 'b'))
  t.notSame(deriveKey(master, 'a'), master)
})

t.test('loadMasterKey from the environment', async (t) => {
  const dataDir = tempDir(t)
  const key = randomBytes(32)
  t.same(loadMasterKey({ env: key.toString('base64'), dataDir }), key, 'base64')
  t.same(loadMasterKey({ env: key.toString('base64url'), dataDir }), key, 'base64url')
  t.same(loadMasterKey({ env: key.toString('hex'), dataDir }), key, 'hex')
  t.same(loadMasterKey({ env: key.toString('hex').toUpperCase(), dataDir }), key, 'upper-case hex')
  t.same(loadMasterKey({ env: `  ${key.toString('base64')}\n`, dataDir }), key, 'surrounding whitespace ignored')

  const bad = [
    randomBytes(16).toString('base64'), randomBytes(31).toString('base64'), randomBytes(33).toString('base64'),
    randomBytes(32).toString('hex').slice(1), 'g'.repeat(64), 'not a key', key.toString('base64') + '=='
  ]
  for (const env of bad) {
    t.throws(() => loadMasterKey({ env, dataDir }), { name: 'ConfigError', message: /PLINTH_MASTER_KEY/ }, `refused: ${env.slice(0, 12)}…`)
  }
  t.throws(() => statSync(join(dataDir, MASTER_KEY_FILE)), { code: 'ENOENT' }, 'no key file written while the variable is set')
})

t.test('loadMasterKey from the key file', async (t) => {
  const dataDir = join(tempDir(t), 'nested', 'data')
  const first = loadMasterKey({ env: undefined, dataDir })
  t.equal(first.length, 32)
  const file = join(dataDir, MASTER_KEY_FILE)
  t.equal(statSync(file).mode & 0o777, 0o600, 'created with mode 0600')
  t.same(loadMasterKey({ env: undefined, dataDir }), first, 'the same key on the next start')
  t.same(loadMasterKey({ env: '', dataDir }), first, 'an empty variable counts as unset')
  t.same(loadMasterKey({ env: null, dataDir }), first)
  t.same(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64'), first, 'stored as base64 text')

  const envKey = randomBytes(32)
  t.same(loadMasterKey({ env: envKey.toString('hex'), dataDir }), envKey, 'the variable wins over the file')

  const sealed = createSecretBox(first).seal('kept')
  t.equal(createSecretBox(loadMasterKey({ env: undefined, dataDir })).open(sealed), 'kept', 'secrets survive a restart')

  writeFileSync(file, randomBytes(32).toString('base64').slice(0, 30))
  t.throws(() => loadMasterKey({ env: undefined, dataDir }), { message: /master\.key.*32-byte/ }, 'a damaged key file is refused, never replaced')
  t.equal(readFileSync(file, 'utf8').length, 30, 'the damaged file is left alone')
})

t.test('processes starting together agree on one key', async (t) => {
  const dataDir = tempDir(t)
  const script = `import { loadMasterKey } from ${JSON.stringify(new URL('../../../services/platform/crypto.ts', import.meta.url).href)}
process.stdout.write(loadMasterKey({ env: undefined, dataDir: process.argv[1] }).toString('hex'))`
  const outputs = await Promise.all(Array.from({ length: 4 }, async () =>
    (await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, dataDir])).stdout))
  t.equal(outputs[0].length, 64)
  t.equal(new Set(outputs).size, 1, 'every process read the same key')
  t.same(loadMasterKey({ env: undefined, dataDir }).toString('hex'), outputs[0])
})

t.test('sealDeterministic: the same message seals the same, any other message to another IV, and opens like seal', async (t) => {
  const box = createSecretBox(randomBytes(32))
  const sealed = box.sealDeterministic('["a",1]', 'scope-1')
  t.equal(box.sealDeterministic('["a",1]', 'scope-1'), sealed, 'same plaintext and associated data: same text')
  t.equal(box.open(sealed, 'scope-1'), '["a",1]')
  const iv = (text: string) => text.split('.')[1]
  t.not(iv(box.sealDeterministic('["a",2]', 'scope-1')), iv(sealed), 'another plaintext gets another IV')
  t.not(iv(box.sealDeterministic('["a",1]', 'scope-2')), iv(sealed), 'another associated data too')
  t.not(iv(box.sealDeterministic('1:x', '')), iv(box.sealDeterministic('x', '1:')), 'the boundary between them is part of the IV')
  t.throws(() => box.open(sealed, 'scope-2'), { code: 'APP_SEALED_SECRET_REJECTED' }, 'bound to its associated data')
  t.not(createSecretBox(randomBytes(32)).sealDeterministic('["a",1]', 'scope-1'), sealed, 'and to its key')
})

t.test('a rotated master key: new values sealed under it, old ones still open under the retired key, nothing else opens them', async (t) => {
  const oldKey = randomBytes(32)
  const newKey = randomBytes(32)
  const before = createSecretBox(oldKey)
  const sealed = before.seal('sk-old', 'org:1:llm-credential:a')
  const cursor = before.sealDeterministic('cursor', 'records')
  const rotated = createSecretBox(newKey, [oldKey])
  t.not(rotated.keyId, before.keyId, 'each key has its own id')
  t.equal(rotated.keyId, masterKeyId(newKey))
  t.equal(createSecretBox(newKey).keyId, rotated.keyId, 'the id depends on the key alone')
  t.match(rotated.keyId, /^[0-9a-f]{12}$/)
  t.equal(rotated.open(sealed, 'org:1:llm-credential:a'), 'sk-old', 'a value sealed under the retired key opens')
  t.equal(rotated.open(cursor, 'records'), 'cursor')
  t.throws(() => before.open(rotated.seal('sk-new', 'x'), 'x'), { code: 'APP_SEALED_SECRET_REJECTED' }, 'the old key alone does not open what the new one sealed')
  t.throws(() => createSecretBox(newKey).open(sealed, 'org:1:llm-credential:a'), { code: 'APP_SEALED_SECRET_REJECTED' }, 'without the retired key the old value stays shut')
})
