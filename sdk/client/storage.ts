/**
 * Where the client keeps its session between calls (and, for localStorage or
 * a file, between page loads or runs). Values are strings; any of the three
 * methods may be asynchronous.
 */
export interface SessionStorage {
  get: (key: string) => string | null | Promise<string | null>
  set: (key: string, value: string) => void | Promise<void>
  remove: (key: string) => void | Promise<void>
}

/** Held in memory: gone when the process or page is. The default. */
export function memoryStorage (): SessionStorage {
  const values = new Map<string, string>()
  return {
    get: (key) => values.get(key) ?? null,
    set: (key, value) => { values.set(key, value) },
    remove: (key) => { values.delete(key) }
  }
}

interface WebStorage {
  getItem: (key: string) => string | null
  setItem: (key: string, value: string) => void
  removeItem: (key: string) => void
}

/** The browser's localStorage (or any Web Storage object given), so a session survives a reload. */
export function localStorageAdapter (storage?: WebStorage): SessionStorage {
  const target = storage ?? (Reflect.get(globalThis, 'localStorage') as WebStorage | undefined)
  if (target === undefined) throw new TypeError('localStorageAdapter: no localStorage here; pass a Web Storage object, or use memoryStorage()')
  return {
    get: (key) => target.getItem(key),
    set: (key, value) => { target.setItem(key, value) },
    remove: (key) => { target.removeItem(key) }
  }
}
