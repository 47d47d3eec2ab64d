import t from 'tap'
import fc from 'fast-check'
import { createPat, isWellFormedPat, patHint } from '../../../services/identity/pat-format.js'

/** The checksum written plainly: the body's CRC32 (bit by bit, over its UTF-16 code units' low bytes) as 6 base62 digits. */
function referenceChecksum (body: string): string {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
  let crc = 0xffffffff
  for (let i = 0; i < body.length; i++) {
    crc = (crc ^ (body.charCodeAt(i) & 0xff)) >>> 0
    for (let k = 0; k < 8; k++) crc = (crc & 1) !== 0 ? (0xedb88320 ^ (crc >>> 1)) >>> 0 : crc >>> 1
  }
  let value = (crc ^ 0xffffffff) >>> 0
  let digits = ''
  for (let i = 0; i < 6; i++) { digits = alphabet[value % 62] + digits; value = Math.floor(value / 62) }
  return digits
}

/** The format written plainly: prefix, underscore, 30 base62, then the checksum. */
function referenceCheck (token: string, prefix: string): boolean {
  if (!token.startsWith(`${prefix}_`)) return false
  const rest = token.slice(prefix.length + 1)
  return /^[0-9A-Za-z]{36}$/.test(rest) && referenceChecksum(rest.slice(0, 30)) === rest.slice(30)
}

t.test('a created token is well formed, under its own prefix only', async (t) => {
  for (let i = 0; i < 200; i++) {
    const token = createPat('plinthpat')
    t.equal(token.length, 'plinthpat_'.length + 36)
    if (!isWellFormedPat(token, 'plinthpat') || !referenceCheck(token, 'plinthpat')) t.fail(`not well formed: ${token}`)
    if (isWellFormedPat(token, 'plinthsvc') || isWellFormedPat(token, 'plinth')) t.fail(`passes under another prefix: ${token}`)
  }
  t.equal(patHint(createPat('abc').replace(/.{4}$/, 'wxyz'), 'abc'), 'abc_…wxyz')
})

t.test('every single-character change is refused', async (t) => {
  const token = createPat('plinthsvc')
  const replacements = ['0', 'z', 'Z', '_', '-', ' ', 'é', '\u0100', '😀']
  for (let at = 0; at < token.length; at++) {
    for (const replacement of replacements) {
      const changed = token.slice(0, at) + replacement + token.slice(at + 1)
      if (changed === token) continue
      t.equal(isWellFormedPat(changed, 'plinthsvc'), referenceCheck(changed, 'plinthsvc'), `${at}: ${replacement}`)
    }
  }
  t.notOk(isWellFormedPat(token.slice(0, -1), 'plinthsvc'), 'one character short')
  t.notOk(isWellFormedPat(`${token}0`, 'plinthsvc'), 'one character long')
  t.notOk(isWellFormedPat('', 'plinthsvc'))
  // A foreign character in the body with a checksum that matches it: only the alphabet check refuses this one.
  for (const foreign of ['é', '\u0130', '_', '-']) {
    const body = token.slice('plinthsvc_'.length, 'plinthsvc_'.length + 29) + foreign
    t.notOk(isWellFormedPat(`plinthsvc_${body}${referenceChecksum(body)}`, 'plinthsvc'), `body ending in ${foreign}`)
  }
})

t.test('agrees with the plain reference on arbitrary strings and mutated tokens', async () => {
  const base62 = fc.constantFrom(...'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'.split(''))
  const candidates = fc.oneof(
    fc.string({ maxLength: 60 }),
    fc.array(base62, { minLength: 36, maxLength: 36 }).map((chars) => `plinthpat_${chars.join('')}`),
    fc.tuple(fc.nat({ max: 45 }), fc.string({ minLength: 1, maxLength: 2 })).map(([at, text]) => {
      const token = createPat('plinthpat')
      return token.slice(0, at) + text + token.slice(at + 1)
    })
  )
  fc.assert(fc.property(candidates, (token) => isWellFormedPat(token, 'plinthpat') === referenceCheck(token, 'plinthpat')), { numRuns: 5000 })
})
