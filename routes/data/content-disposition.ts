const INLINE = /^(image\/(?!svg\+xml$)|audio\/|video\/|text\/|application\/pdf$)/

/**
 * RFC 6266: `inline` only for types a browser shows without running them, and
 * `attachment` for the rest. SVG can carry scripts, so it is always an
 * attachment. The name goes in `filename*` (UTF-8) with an ASCII fallback.
 */
export function contentDisposition (name: string, type: string): string {
  const disposition = INLINE.test(type) ? 'inline' : 'attachment'
  const fallback = name.replace(/[^\x20-\x7e]|["\\%]/g, '_')
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  return `${disposition}; filename="${fallback}"; filename*=UTF-8''${encoded}`
}
