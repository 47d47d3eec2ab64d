import t from 'tap'
import { etagFor, ifNoneMatch, parseRange, type RangeAnswer } from '../../../services/files/range.js'

const partial = (start: number, end: number, size: number): RangeAnswer =>
  ({ status: 206, start, end, length: end - start + 1, contentRange: `bytes ${start}-${end}/${size}` })
const whole: RangeAnswer = { status: 200 }
const unsatisfiable = (size: number): RangeAnswer => ({ status: 416, contentRange: `bytes */${size}` })

t.test('parseRange', async (t) => {
  const cases: Array<[string | undefined | null, number, RangeAnswer]> = [
    [undefined, 100, whole],
    [null, 100, whole],
    ['bytes=0-0', 100, partial(0, 0, 100)],
    ['bytes=0-99', 100, partial(0, 99, 100)],
    ['bytes=10-19', 100, partial(10, 19, 100)],
    ['bytes=99-99', 100, partial(99, 99, 100)],
    ['bytes=90-1000', 100, partial(90, 99, 100)],
    ['bytes=50-', 100, partial(50, 99, 100)],
    ['bytes=0-', 100, partial(0, 99, 100)],
    ['bytes=-10', 100, partial(90, 99, 100)],
    ['bytes=-1', 100, partial(99, 99, 100)],
    ['bytes=-500', 100, partial(0, 99, 100)],
    ['Bytes = 5 - 6 ', 100, partial(5, 6, 100)],
    ['bytes=100-', 100, unsatisfiable(100)],
    ['bytes=100-200', 100, unsatisfiable(100)],
    ['bytes=-0', 100, unsatisfiable(100)],
    ['bytes=0-', 0, unsatisfiable(0)],
    ['bytes=-5', 0, unsatisfiable(0)],
    ['bytes=0-0,5-6', 100, whole],
    ['bytes=0-0, 200-300', 100, whole],
    ['bytes=5-4', 100, whole],
    ['bytes=-', 100, whole],
    ['bytes=a-b', 100, whole],
    ['bytes=1.5-2', 100, whole],
    ['bytes 0-5', 100, whole],
    ['items=0-5', 100, whole],
    ['', 100, whole],
    ['bytes=99999999999999999999-', 100, unsatisfiable(100)],
    ['bytes=0-99999999999999999999', 100, partial(0, 99, 100)]
  ]
  for (const [header, size, expected] of cases) {
    t.same(parseRange(header, size), expected, `${JSON.stringify(header)} of ${size} bytes`)
  }
  t.throws(() => parseRange('bytes=0-1', -1), RangeError)
  t.throws(() => parseRange('bytes=0-1', 1.5), RangeError)
})

const digest = 'ab'.repeat(32)

t.test('etagFor makes a strong, quoted tag from a sha256', async (t) => {
  t.equal(etagFor(digest), `"${digest}"`)
  t.equal(etagFor(digest.toUpperCase()), `"${digest}"`, 'normalised to lower case')
  for (const bad of ['', 'abc', 'zz'.repeat(32), `${digest}0`]) t.throws(() => etagFor(bad), RangeError, `refused: ${bad.slice(0, 10)}`)
})

t.test('ifNoneMatch', async (t) => {
  const etag = etagFor(digest)
  const other = `"${'cd'.repeat(32)}"`
  const cases: Array<[string | undefined | null, boolean, string]> = [
    [undefined, false, 'no header'],
    [null, false, 'no header'],
    ['', false, 'empty'],
    [etag, true, 'the same tag'],
    [`W/${etag}`, true, 'a weak form of the same tag (weak comparison)'],
    [other, false, 'another tag'],
    [`${other}, ${etag}`, true, 'in a list'],
    [`${other},${etag}`, true, 'in a list without spaces'],
    [`${other} , W/${etag} `, true, 'a weak tag in a list'],
    [`${other}, "zzz"`, false, 'a list without it'],
    ['*', true, 'any representation'],
    [' * ', true, 'any, padded'],
    [digest, false, 'unquoted is malformed'],
    [`${other}, ${digest}`, false, 'a malformed element matches nothing after it'],
    [`"${digest}`, false, 'an unterminated quote']
  ]
  for (const [header, expected, what] of cases) t.equal(ifNoneMatch(header, etag), expected, what)
  t.equal(ifNoneMatch(etag, `W/${etag}`), true, 'a weak current tag still matches')
})
