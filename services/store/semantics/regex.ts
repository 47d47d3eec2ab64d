import RE2 from 're2'
import { QueryError } from '../errors.js'

const ALLOWED_OPTIONS = new Set(['i', 'm', 's', 'x'])
const ALLOWED_LITERAL_FLAGS = new Set(['i', 'm', 's'])

/**
 * Compiles a pattern on RE2, whose matching time is linear in the text:
 * backtracking engines (V8's, PCRE) take exponential time on patterns such as
 * `(.*.*)*x`, and one request must not freeze every tenant. What RE2 cannot
 * express (backreferences, lookaround) throws, for callers to refuse. Every
 * string is tested, whatever its length, as MongoDB tests it: no stored text
 * is longer than a document (under 16 MiB), so linear stays short.
 */
export function linearRegExp (source: string, flags = ''): RegExp {
  return new RE2(source, flags)
}

/** A pattern matching `text` literally: user input searched for as text, never read as a pattern. */
export function literalPattern (text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/**
 * A pattern in the one form both engines run alike: `source` is what RE2
 * compiles here, `serverSource` what MongoDB's PCRE is sent (the same text,
 * except where PCRE needs other words for the same meaning).
 */
export interface PortablePattern { source: string, serverSource: string, flags: string }

/**
 * Builds the linear-time expression that behaves like MongoDB's PCRE for
 * `$regex` with `$options` (i, m, s, x), or refuses the pattern. A RegExp
 * literal may carry only i, m and s: the driver would turn `g` into `s` and
 * drop `y`/`u`, so those are refused rather than silently reinterpreted.
 */
export function buildRegExp (pattern: string | RegExp, options: string | undefined, errorPath: string): RegExp {
  const portable = portablePattern(pattern, options, errorPath)
  try {
    return linearRegExp(portable.source, portable.flags)
  } catch (error) {
    throw new QueryError(errorPath, `Invalid or unsupported regular expression (backreferences and lookaround are not supported): ${(error as Error).message}`)
  }
}

/**
 * The pattern rewritten so RE2 and PCRE agree on it, or refused where they
 * cannot be made to: `x` is applied here (so PCRE never sees extended
 * syntax), `$` without `m` becomes `\z` (end of text; PCRE would also match
 * before a final newline, RE2 would not), `\s` becomes the explicit class
 * both read alike (PCRE's also holds vertical tab), and escapes or inline
 * flags the two read differently are refused with the reason.
 */
export function portablePattern (pattern: string | RegExp, options: string | undefined, errorPath: string): PortablePattern {
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
  if (!source.isWellFormed()) throw new QueryError(errorPath, 'A regular expression cannot hold unpaired surrogates')
  if (flags.includes('x')) source = stripExtendedSyntax(source)
  const portableFlags = [...new Set(flags.replace(/x/g, ''))].sort().join('')
  const { out, lineStarts } = rewriteForBothEngines(source, portableFlags.includes('m'), errorPath)
  let serverSource = out
  // With m, RE2's `^` also matches after a newline that ends the text, PCRE's does not: PCRE is told so explicitly.
  for (const at of lineStarts.reverse()) serverSource = serverSource.slice(0, at) + LINE_START_FOR_PCRE + serverSource.slice(at + 1)
  return { source: out, serverSource, flags: portableFlags }
}

const LINE_START_FOR_PCRE = '(?:^|(?<=\\n)\\z)'

// RE2's \s; PCRE's also holds \v (VT), so both are given this class instead.
const SPACE_CLASS = '\\t\\n\\f\\r '
/** Escapes PCRE and RE2 read differently (or only one of them knows), with what to write instead. */
const DIVERGENT_ESCAPES: Record<string, string> = {
  Z: '\\Z (end of text or before a final newline) is not supported: use \\z or $, which match only at the end of the text',
  v: '\\v is vertical whitespace to MongoDB but a vertical tab to RE2: use \\x0B or a class',
  V: '\\V is not supported',
  h: '\\h is not supported: use [ \\t]',
  H: '\\H is not supported',
  R: '\\R is not supported: use \\r?\\n',
  K: '\\K is not supported',
  G: '\\G is not supported',
  C: '\\C is not supported',
  X: '\\X is not supported',
  N: '\\N is not supported',
  u: '\\u is not understood by MongoDB: use \\x{…}',
  U: '\\U is not supported',
  L: '\\L is not supported',
  l: '\\l is not supported',
  e: '\\e is not supported: use \\x1B'
}

function rewriteForBothEngines (source: string, multiline: boolean, errorPath: string): { out: string, lineStarts: number[] } {
  let out = ''
  const lineStarts: number[] = []
  let inClass = false
  for (let i = 0; i < source.length; i++) {
    const char = source[i]
    if (char === '\\') {
      const next = source[i + 1]
      i++
      if (next === undefined) return { out: out + char, lineStarts } // a trailing backslash: RE2 refuses it with its own message
      if (next === 'Q') {
        // \Q…\E is literal text to both engines.
        const end = source.indexOf('\\E', i + 1)
        const stop = end === -1 ? source.length : end + 2
        out += source.slice(i - 1, stop)
        i = stop - 1
      } else if (Object.hasOwn(DIVERGENT_ESCAPES, next)) {
        throw new QueryError(errorPath, DIVERGENT_ESCAPES[next])
      } else if (next >= '1' && next <= '9') {
        throw new QueryError(errorPath, `Invalid or unsupported regular expression (backreferences and lookaround are not supported): \\${next} is a backreference or an octal escape; write a character as \\x{…}`)
      } else if (next === 's') {
        out += inClass ? SPACE_CLASS : `[${SPACE_CLASS}]`
      } else if (next === 'S') {
        if (inClass) throw new QueryError(errorPath, '\\S inside a character class is not supported: list the characters instead')
        out += `[^${SPACE_CLASS}]`
      } else {
        out += char + next
      }
    } else if (inClass) {
      if (char === '[' && source[i + 1] === ':') {
        // A POSIX class such as [:alpha:] is copied whole, so its `]` does not end the class.
        const end = source.indexOf(':]', i + 2)
        const stop = end === -1 ? i + 1 : end + 2
        out += source.slice(i, stop)
        i = stop - 1
      } else {
        if (char === ']') inClass = false
        out += char
      }
    } else if (char === '[') {
      inClass = true
      out += char
      // Both engines take a `]` right after `[` or `[^` literally.
      if (source[i + 1] === '^') out += source[++i]
      if (source[i + 1] === ']') out += source[++i]
    } else if (char === '$' && !multiline) {
      out += '\\z'
    } else if (char === '^' && multiline) {
      lineStarts.push(out.length)
      out += char
    } else if (char === '(' && source[i + 1] === '?') {
      const inline = /^\(\?([A-Za-z-]*)[:)]/.exec(source.slice(i))
      if (inline !== null && /[mx]/.test(inline[1])) throw new QueryError(errorPath, 'Set m and x in $options, not inline: the anchors are rewritten for both engines from $options')
      out += char
    } else if (char === '{' && source[i + 1] === ',') {
      throw new QueryError(errorPath, '{,n} is a quantifier to newer PCRE but literal text to RE2: write {0,n} or escape the brace')
    } else {
      out += char
    }
  }
  return { out, lineStarts }
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
