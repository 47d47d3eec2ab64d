import { useEffect, useState } from 'preact/hooks'

/** The console's routes are paths under /console/; the server answers each with index.html. */
export const BASE = '/console'

export function href (path: string): string {
  return `${BASE}${path}`
}

export function navigate (path: string): void {
  history.pushState(null, '', href(path))
  dispatchEvent(new PopStateEvent('popstate'))
}

/** The path under /console, followed as links and the back button change it. */
export function usePath (): string {
  const read = () => location.pathname.startsWith(BASE) ? (location.pathname.slice(BASE.length) || '/') : '/'
  const [path, setPath] = useState(read)
  useEffect(() => {
    const changed = () => { setPath(read()) }
    addEventListener('popstate', changed)
    return () => { removeEventListener('popstate', changed) }
  }, [])
  return path
}

/** Matches `/projects/:projectId` against a path: the named parts, or null. */
export function match (pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/')
  const got = path.replace(/\/$/, '').split('/')
  if (want.length !== got.length) return null
  const params: Record<string, string> = {}
  for (let i = 0; i < want.length; i++) {
    if (want[i].startsWith(':')) params[want[i].slice(1)] = decodeURIComponent(got[i])
    else if (want[i] !== got[i]) return null
  }
  return params
}
