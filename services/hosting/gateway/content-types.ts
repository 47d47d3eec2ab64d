/**
 * Content types of the files a static site publishes, by extension; text
 * types are declared UTF-8. Anything else is sent as bytes, and
 * `X-Content-Type-Options: nosniff` keeps browsers from guessing otherwise.
 */
const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  htm: 'text/html; charset=utf-8',
  css: 'text/css; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  mjs: 'text/javascript; charset=utf-8',
  cjs: 'text/javascript; charset=utf-8',
  json: 'application/json; charset=utf-8',
  map: 'application/json; charset=utf-8',
  webmanifest: 'application/manifest+json; charset=utf-8',
  txt: 'text/plain; charset=utf-8',
  md: 'text/markdown; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  xml: 'application/xml; charset=utf-8',
  rss: 'application/rss+xml; charset=utf-8',
  atom: 'application/atom+xml; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  avif: 'image/avif',
  ico: 'image/x-icon',
  bmp: 'image/bmp',
  woff: 'font/woff',
  woff2: 'font/woff2',
  ttf: 'font/ttf',
  otf: 'font/otf',
  wasm: 'application/wasm',
  pdf: 'application/pdf',
  zip: 'application/zip',
  gz: 'application/gzip',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  ogg: 'audio/ogg',
  mp4: 'video/mp4',
  webm: 'video/webm'
}

export function extensionOf (name: string): string | null {
  const dot = name.lastIndexOf('.')
  return dot <= 0 ? null : name.slice(dot + 1).toLowerCase()
}

export function contentTypeFor (name: string): string {
  const extension = extensionOf(name)
  return (extension === null ? undefined : TYPES[extension]) ?? 'application/octet-stream'
}

export const isHtml = (name: string) => { const extension = extensionOf(name); return extension === 'html' || extension === 'htm' }
