import { useEffect, useRef, useState } from 'preact/hooks'
import type { AssistantRun, DataOf } from '@plinth/sdk/admin'
import { admin, messageOf } from '../api.js'
import { ErrorNote, Page, TextField, useLoad, useSubmit } from '../ui.js'

type Message = DataOf<'/api/projects/{projectId}/assistant/sessions/{sessionId}/messages', 'get'>['items'][number]
type Approval = AssistantRun['approvals'][number]

/** The run being answered: the text as it streams, the tool calls and results as they come, where it stands. */
interface Live { runId: string, text: string, steps: string[], status: string }

const short = (value: unknown) => { const text = JSON.stringify(value) ?? ''; return text.length > 160 ? `${text.slice(0, 160)}…` : text }

function said (message: Message): string {
  return message.content.map((part) => {
    if (part.type === 'text') return part.text
    if (part.type === 'tool-call') return `[calls ${part.toolName} ${short(part.input)}]`
    return `[${part.toolName} answered ${short(part.output)}]`
  }).join(' ')
}

/** A project's assistant: conversations, a message answered by a run whose events stream in, and its approvals. */
export function Assistant ({ projectId }: { projectId: string }) {
  const sessions = useLoad(async () => (await admin.assistant.sessions(projectId)).items, [projectId])
  const [chosen, setChosen] = useState<string | null>(null)
  const sessionId = chosen ?? sessions.data?.[0]?.id ?? null
  const messages = useLoad(async () => sessionId === null ? [] : (await admin.assistant.messages(projectId, sessionId)).items, [projectId, sessionId])
  const [live, setLive] = useState<Live | null>(null)
  const [pending, setPending] = useState<Approval[]>([])
  const [error, setError] = useState<string | null>(null)
  const lastId = useRef(0)
  const [title, setTitle] = useState('')
  const [content, setContent] = useState('')

  /** Follows the run's events from `after` until the server ends the stream (the run's end or a pause), then reads where it stands. */
  const follow = async (session: string, runId: string, after: number) => {
    lastId.current = after
    for await (const event of admin.assistant.followRun(projectId, session, runId, { after })) {
      lastId.current = event.id
      const data = event.data as Record<string, unknown>
      setLive((now) => {
        const base = now?.runId === runId ? now : { runId, text: '', steps: [], status: 'running' }
        if (event.type === 'text.delta') return { ...base, text: base.text + String(data.text) }
        if (event.type === 'tool.call') return { ...base, steps: [...base.steps, `Tool call: ${String(data.toolName)} ${short(data.input)}`] }
        if (event.type === 'tool.result') return { ...base, steps: [...base.steps, `Tool result of ${String(data.toolName)}: ${short(data.output)}`] }
        if (event.type === 'approval.required') return { ...base, status: 'awaiting approval' }
        if (event.type.startsWith('run.') && event.type !== 'run.started') return { ...base, status: event.type.slice(4) }
        return base
      })
    }
    const run = await admin.assistant.run(projectId, session, runId)
    setPending(run.status === 'awaiting_approval' ? run.approvals.filter((approval) => approval.decision === null) : [])
    messages.reload()
    sessions.reload()
  }

  // A conversation opened while its run waits on approvals shows them.
  useEffect(() => {
    setPending([])
    setLive(null)
    const active = sessions.data?.find((session) => session.id === sessionId)?.activeRunId
    if (sessionId === null || active == null) return
    admin.assistant.run(projectId, sessionId, active).then((run) => {
      if (run.status === 'awaiting_approval') setPending(run.approvals.filter((approval) => approval.decision === null))
    }, (failure: unknown) => { setError(messageOf(failure)) })
  }, [projectId, sessionId])

  const start = useSubmit(async () => {
    const session = await admin.assistant.createSession(projectId, title.trim() === '' ? {} : { title })
    setTitle('')
    setChosen(session.id)
    sessions.reload()
  })
  const send = useSubmit(async () => {
    if (sessionId === null) return
    const { run } = await admin.assistant.send(projectId, sessionId, { content })
    setContent('')
    messages.reload()
    setLive({ runId: run.id, text: '', steps: [], status: run.status })
    await follow(sessionId, run.id, 0)
  })
  const decide = (approval: Approval, decision: 'approve' | 'deny') => {
    if (sessionId === null) return
    const runId = live?.runId ?? sessions.data?.find((session) => session.id === sessionId)?.activeRunId ?? ''
    admin.assistant.decide(projectId, sessionId, runId, approval.callId, { decision })
      .then(async (run) => {
        setError(null)
        setPending(run.approvals.filter((one) => one.decision === null))
        if (run.status !== 'awaiting_approval') await follow(sessionId, runId, live?.runId === runId ? lastId.current : 0)
      })
      .catch((failure: unknown) => { setError(messageOf(failure)) })
  }

  return (
    <Page title='Assistant' crumbs={[['Organizations', '/organizations'], ['Collections', `/projects/${encodeURIComponent(projectId)}`]]}>
      <ErrorNote error={sessions.error ?? messages.error ?? error} />
      <form onSubmit={(event) => { start.submit(event) }} class='toolbar'>
        <TextField label='New conversation title (optional)' value={title} onInput={setTitle} />
        <button type='submit' disabled={start.busy}>Start conversation</button>
      </form>
      <ErrorNote error={start.error} />
      {sessions.data !== null && sessions.data.length > 0 && (
        <label class='field'>
          <span>Conversation</span>
          <select value={sessionId ?? ''} onChange={(event) => { setChosen(event.currentTarget.value) }}>
            {sessions.data.map((session) => <option key={session.id} value={session.id}>{session.title}</option>)}
          </select>
        </label>
      )}
      {sessionId !== null && (
        <>
          <h2>Transcript</h2>
          <ul class='transcript' aria-label='Transcript'>
            {(messages.data ?? []).map((message) => <li key={message.id} class={message.role}><strong>{message.role}</strong>: {said(message)}</li>)}
          </ul>
          {live !== null && (
            <section aria-labelledby='live-answer' class='card'>
              <h3 id='live-answer'>Answer ({live.status})</h3>
              <p aria-live='polite' data-testid='streamed'>{live.text}</p>
              {live.steps.length > 0 && <ul class='list'>{live.steps.map((step, index) => <li key={index}>{step}</li>)}</ul>}
            </section>
          )}
          {pending.length > 0 && (
            <section aria-labelledby='approvals' class='card'>
              <h3 id='approvals'>Waiting for your approval</h3>
              {pending.map((approval) => (
                <div key={approval.callId}>
                  <p><code>{approval.toolName}</code> {short(approval.input)} (needs {approval.permission})</p>
                  <button type='button' onClick={() => { decide(approval, 'approve') }}>Approve {approval.toolName}</button>{' '}
                  <button type='button' class='danger' onClick={() => { decide(approval, 'deny') }}>Deny {approval.toolName}</button>
                </div>
              ))}
            </section>
          )}
          <form onSubmit={(event) => { send.submit(event) }} class='card'>
            <label class='field'>
              <span>Message</span>
              <textarea value={content} required onInput={(event) => { setContent(event.currentTarget.value) }} />
            </label>
            <ErrorNote error={send.error} />
            <button type='submit' disabled={send.busy}>Send</button>
          </form>
        </>
      )}
    </Page>
  )
}
