import { useEffect, useState } from 'preact/hooks'
import { packFiles } from '@plinth/sdk/admin'
import { admin, messageOf } from '../api.js'
import { ErrorNote, useSubmit } from '../ui.js'

/** What was picked: one archive, or a folder's files (each with its path under the folder picked). */
type Picked = { kind: 'archive', file: File } | { kind: 'folder', name: string, files: File[] } | null

/** A deployment in one of these states is still on its way; any other state is where it ended. */
const UNDER_WAY = new Set(['queued', 'building', 'releasing'])

/** A folder picker gives paths that start with the folder's own name; the archive holds what is inside it. */
function folderArchive (files: File[]): Blob {
  return packFiles(files.map((file) => ({ path: file.webkitRelativePath.split('/').slice(1).join('/'), data: file })))
}

/**
 * Deploy by upload: an archive (`.tar.gz`, `.tgz`, `.tar`) or a folder, which
 * is packed as a tar here, sent in chunks through the SDK's
 * `hosting.deployArchive` with its progress shown, then queued.
 */
export function DeploySource ({ projectId, appId, onQueued }: { projectId: string, appId: string, onQueued: (deploymentId: string) => void }) {
  const [picked, setPicked] = useState<Picked>(null)
  const [progress, setProgress] = useState<{ sent: number, total: number } | null>(null)
  const { submit, busy, error } = useSubmit(async () => {
    if (picked === null) throw new Error('Pick an archive or a folder first.')
    const archive = picked.kind === 'archive' ? picked.file : folderArchive(picked.files)
    setProgress({ sent: 0, total: archive.size })
    const deployment = await admin.hosting.deployArchive(projectId, appId, archive, {
      name: picked.kind === 'archive' ? picked.file.name : `${picked.name}.tar`,
      onProgress: (step) => { if (step.phase === 'upload') setProgress({ sent: step.sentBytes, total: step.totalBytes }) }
    })
    onQueued(deployment.id)
  })
  const pickArchive = (input: HTMLInputElement) => {
    const file = input.files?.[0]
    setPicked(file === undefined ? null : { kind: 'archive', file })
  }
  const pickFolder = (input: HTMLInputElement) => {
    const files = Array.from(input.files ?? [])
    setPicked(files.length === 0 ? null : { kind: 'folder', name: files[0].webkitRelativePath.split('/')[0] || 'source', files })
  }
  return (
    <form onSubmit={submit} class='card' aria-label='Deploy by upload'>
      <label class='field'>
        <span>Source archive (.tar.gz, .tgz or .tar)</span>
        <input type='file' accept='.tar.gz,.tgz,.tar,application/gzip,application/x-tar' onChange={(event) => { pickArchive(event.currentTarget) }} />
      </label>
      <label class='field'>
        <span>Or a source folder</span>
        {/* webkitdirectory is not in Preact's types; every current browser has it. */}
        <input type='file' {...{ webkitdirectory: true }} multiple onChange={(event) => { pickFolder(event.currentTarget) }} />
      </label>
      {picked !== null && (
        <p>{picked.kind === 'archive' ? `Archive ${picked.file.name}, ${picked.file.size} bytes.` : `Folder ${picked.name}, ${picked.files.length} file(s), packed as a tar.`}</p>
      )}
      {progress !== null && (
        <p>
          <label>
            Uploaded {progress.sent} of {progress.total} bytes{' '}
            <progress max={progress.total} value={progress.sent} />
          </label>
        </p>
      )}
      <ErrorNote error={error} />
      <button type='submit' disabled={busy || picked === null}>Deploy</button>
    </form>
  )
}

interface Line { seq: number, text: string }

/**
 * A deployment's build log as it is written (the SDK's `followLogs`, server-sent
 * events), with the deployment's state read until it settles; the stream is
 * closed when the screen leaves it.
 */
export function LiveBuildLog ({ projectId, appId, deploymentId, onSettled }: { projectId: string, appId: string, deploymentId: string, onSettled: () => void }) {
  const [lines, setLines] = useState<Line[]>([])
  const [state, setState] = useState<string>('queued')
  const [error, setError] = useState<string | null>(null)
  useEffect(() => {
    const stop = new AbortController()
    setLines([])
    void (async () => {
      for await (const event of admin.hosting.followLogs(projectId, appId, 'build', { deploymentId, signal: stop.signal })) {
        const data = event.data as { seq?: number, line?: string }
        setLines((seen) => [...seen, { seq: data.seq ?? event.seq ?? seen.length, text: data.line ?? String(event.data) }])
      }
    })().catch((failure: unknown) => { if (!stop.signal.aborted) setError(messageOf(failure)) })
    // The log stream does not say when the build ends: the deployment's state does.
    const poll = async (): Promise<void> => {
      while (!stop.signal.aborted) {
        const deployment = await admin.hosting.deployment(projectId, appId, deploymentId)
        if (stop.signal.aborted) return
        setState(deployment.state)
        if (!UNDER_WAY.has(deployment.state)) { onSettled(); return }
        await new Promise((resolve) => setTimeout(resolve, 500))
      }
    }
    poll().catch((failure: unknown) => { if (!stop.signal.aborted) setError(messageOf(failure)) })
    return () => { stop.abort() }
  }, [projectId, appId, deploymentId])
  const title = `Live build log of ${deploymentId}`
  return (
    <section aria-label={title}>
      <h2>{title}</h2>
      <p role='status'>Deployment {deploymentId}: <strong>{state}</strong></p>
      <ErrorNote error={error} />
      <pre class='blob' tabIndex={0} aria-label={`Build output of ${deploymentId}`}>{lines.map((line) => line.text).join('\n')}</pre>
    </section>
  )
}
