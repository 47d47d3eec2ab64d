import RE2 from 're2'
import { QueryError } from '../errors.js'

const ALLOWED_OPTIONS = new Set(['i', 'm', 's', 'x'])
const ALLOWED_LITERAL_FLAGS = new Set(['i', 'm', 's'])

/** Strings longer than this are never tested against a pattern (the data API stores none that long). */
const MAX_REGEX_SUBJECT = 1024 * 1024

/**
 * Compiles a pattern on RE2, whose matching time is linear in the text:
 * backtracking engines (V8's, PCRE) take exponential time on patterns such as
 * `(.*.*)*x`, and one request must not freeze every tenant. What RE2 cannot
 * express (backreferences, lookaround) throws, for callers to refuse.
 */
export function linearRegExp (source: string, flags = ''): RegExp {
  const compiled = new RE2(source, flags)
  // Bounded subjects: RE2 is linear, but linear in a gigabyte is still too long for one request.
  const test = compiled.test.bind(compiled)
  compiled.test = (subject: string) => subject.length <= MAX_REGEX_SUBJECT && test(subject)
  return compiled
}

/**
 * Builds the linear-time expression that behaves like MongoDB's PCRE for
 * `$regex` with `$options` (i, m, s, x), or refuses the pattern. A RegExp
 * literal may carry only i, m and s: the driver would turn `g` into `s` and
 * drop `y`/`u`, so those are refused rather than silently reinterpreted.
 */
export function buildRegExp (pattern: string | RegExp, options: string | undefined, errorPath: string): RegExp {
  let source: string
  let flags = ''
  if (pattern instanceof RegExp) {
    for (const flag of pattern.flags) {
      if (!ALLOWED_LITERAL_FLAGS.has(flag)) throw new QueryError(errorPath, `Regular expression flag '${flag}' is not supported (use i, m, s)`)
    }
    if (pattern.flags.length > 0 && options !== undefined && options.length > 0) {
      throw new QueryError(errorPath, 'Regular expression options are set both in the RegExp and in $options')
    }
    source = pattern.source
    flags = pattern.flags
  } else {
    source = pattern
  }
  if (options !== undefined) {
    for (const option of options) {
      if (!ALLOWED_OPTIONS.has(option)) throw new QueryError(errorPath, `Invalid regular expression option '${option}' (allowed: i, m, s, x)`)
    }
    flags += options
  }
  if (source.includes('\0')) throw new QueryError(errorPath, 'A regular expression cannot contain a null byte')
  if (flags.includes('x')) source = stripExtendedSyntax(source)
  const jsFlags = [...new Set(flags.replace(/x/g, ''))].join('')
  try {
    return linearRegExp(source, jsFlags)
  } catch (error) {
    throw new QueryError(errorPath, `Invalid or unsupported regular expression (backreferences and lookaround are not supported): ${(error as Error).message}`)
  }
}

const WHITESPACE = new Set([' ', '\t', '\n', '\v', '\f', '\r'])

/** PCRE's `x` option: unescaped whitespace and `#` comments outside classes are ignored. */
function stripExtendedSyntax (source: string): string {
  let out = ''
  let inClass = false
  for (let i = 0; i < source.length; i++) {
    const char = source[i]
    if (char === '\\') {
      out += char + (source[i + 1] ?? '')
      i++
    } else if (inClass) {
      if (char === ']') inClass = false
      out += char
    } else if (char === '[') {
      inClass = true
      out += char
      // PCRE takes a `]` right after `[` or `[^` literally.
      if (source[i + 1] === '^') out += source[++i]
      if (source[i + 1] === ']') {
        out += '\\]'
        i++
      }
    } else if (WHITESPACE.has(char)) {
      continue
    } else if (char === '#') {
      while (i + 1 < source.length && source[i + 1] !== '\n') i++
    } else {
      out += char
    }
  }
  return out
}
