import type { ComponentChildren } from 'preact'
import { useCallback, useEffect, useRef, useState } from 'preact/hooks'
import { href, navigate } from './router.js'
import { messageOf } from './api.js'

/** A real link (it opens in a new tab too) that moves within the app without reloading it. */
export function Link ({ to, children }: { to: string, children: ComponentChildren }) {
  const follow = (event: MouseEvent) => {
    if (event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return
    event.preventDefault()
    navigate(to)
  }
  return <a href={href(to)} onClick={follow}>{children}</a>
}

/** A secret the API shows this once (only its hash is kept): in a read-only field until dismissed. */
export function ShownOnce ({ name, label, value, onDone }: { name: string, label: string, value: string, onDone: () => void }) {
  return (
    <div class='card' role='status'>
      <p><strong>{name}</strong> created. Copy it now: it is not shown again.</p>
      <label class='field'>
        <span>{label}</span>
        <input type='text' readOnly value={value} onFocus={(event) => { event.currentTarget.select() }} />
      </label>
      <button type='button' onClick={onDone}>Done, hide it</button>
    </div>
  )
}

/** The API's refusal, read out by screen readers as it appears. */
export function ErrorNote ({ error }: { error: string | null }) {
  if (error === null) return null
  return <p class='error' role='alert'>{error}</p>
}

export function Page ({ title, crumbs, children }: { title: string, crumbs?: Array<[string, string]>, children: ComponentChildren }) {
  useEffect(() => { document.title = `${title} · Plinth console` }, [title])
  return (
    <main id='main'>
      {crumbs !== undefined && crumbs.length > 0 && (
        <nav aria-label='Breadcrumb'>
          <ol class='crumbs'>{crumbs.map(([label, to]) => <li key={to}><Link to={to}>{label}</Link></li>)}</ol>
        </nav>
      )}
      <h1>{title}</h1>
      {children}
    </main>
  )
}

/**
 * Loads once and again on `reload()`; failures become the API's message.
 * `replace` shows a value the page already has (a write's answer) without
 * reading it again, and drops a load still on its way.
 */
export function useLoad<T> (load: () => Promise<T>, deps: unknown[]): { data: T | null, error: string | null, reload: () => void, replace: (value: T) => void } {
  const [data, setData] = useState<T | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [round, setRound] = useState(0)
  const current = useRef(0)
  useEffect(() => {
    const ticket = ++current.current
    load().then((value) => { if (current.current === ticket) { setData(value); setError(null) } }, (failure: unknown) => { if (current.current === ticket) setError(messageOf(failure)) })
    return () => { if (current.current === ticket) current.current++ }
  }, [...deps, round])
  const replace = useCallback((value: T) => { current.current++; setData(value); setError(null) }, [])
  return { data, error, reload: useCallback(() => { setRound((n) => n + 1) }, []), replace }
}

/** A form's submit: runs `act`, shows its failure, and is busy meanwhile. */
export function useSubmit (act: () => Promise<void>): { submit: (event: Event) => void, busy: boolean, error: string | null } {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const submit = (event: Event) => {
    event.preventDefault()
    setBusy(true)
    act().then(() => { setError(null) }, (failure: unknown) => { setError(messageOf(failure)) }).finally(() => { setBusy(false) })
  }
  return { submit, busy, error }
}

export function TextField ({ label, value, onInput, type = 'text', required = false, autoComplete }: {
  label: string, value: string, onInput: (value: string) => void, type?: 'text' | 'email' | 'password' | 'number', required?: boolean, autoComplete?: string
}) {
  // Preact types each input kind apart, so each is written out.
  const common = { value, required, autoComplete, onInput: (event: { currentTarget: HTMLInputElement }) => { onInput(event.currentTarget.value) } }
  return (
    <label class='field'>
      <span>{label}</span>
      {type === 'password'
        ? <input type='password' {...common} />
        : type === 'number'
          ? <input type='number' {...common} />
          : type === 'email' ? <input type='email' {...common} /> : <input type='text' {...common} />}
    </label>
  )
}
