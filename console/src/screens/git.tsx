import { useState } from 'preact/hooks'
import { admin } from '../api.js'
import { navigate } from '../router.js'
import { ErrorNote, Link, Page, TextField, useLoad, useSubmit } from '../ui.js'

const repoPath = (projectId: string, slug: string) => `/projects/${encodeURIComponent(projectId)}/git/${encodeURIComponent(slug)}`

/** A project's git repositories, and a new one (with a README as its first commit, or empty). */
export function Repositories ({ projectId }: { projectId: string }) {
  const repos = useLoad(async () => await admin.git.repositories(projectId), [projectId])
  const [name, setName] = useState('')
  const [readme, setReadme] = useState(true)
  const { submit, busy, error } = useSubmit(async () => {
    const repo = await admin.git.createRepository(projectId, { name, readme })
    navigate(repoPath(projectId, repo.slug))
  })
  return (
    <Page title='Git repositories' crumbs={[['Organizations', '/organizations'], ['Collections', `/projects/${encodeURIComponent(projectId)}`]]}>
      <ErrorNote error={repos.error} />
      {repos.data !== null && (repos.data.length === 0
        ? <p>No repository yet: create the first below.</p>
        : <ul class='list'>{repos.data.map((repo) => <li key={repo.id}><Link to={repoPath(projectId, repo.slug)}>{repo.name}</Link> ({repo.visibility})</li>)}</ul>)}
      <h2>New repository</h2>
      <form onSubmit={submit} class='card'>
        <TextField label='Repository name' value={name} onInput={setName} required />
        <label class='check'>
          <input type='checkbox' checked={readme} onChange={(event) => { setReadme(event.currentTarget.checked) }} />
          <span>Start with a README</span>
        </label>
        <ErrorNote error={error} />
        <button type='submit' disabled={busy}>Create repository</button>
      </form>
    </Page>
  )
}

/** A file's text as the API gives it: UTF-8 inline, or a note for binary and oversized files. */
function FileView ({ projectId, slug, ref, path }: { projectId: string, slug: string, ref: string, path: string }) {
  const blob = useLoad(async () => await admin.git.blob(projectId, slug, { ref, path }), [projectId, slug, ref, path])
  if (blob.error !== null) return <ErrorNote error={blob.error} />
  if (blob.data === null) return null
  return (
    <section aria-label={`File ${path}`}>
      <h3>{path} ({blob.data.size} bytes)</h3>
      {blob.data.binary || blob.data.content === null
        ? <p>A binary or large file: not shown here.</p>
        : <pre class='blob' tabIndex={0}>{blob.data.content}</pre>}
    </section>
  )
}

/** One repository: its branches, the tree of a branch (folders opened in place, files shown), and its latest commits. */
export function Repository ({ projectId, slug }: { projectId: string, slug: string }) {
  const repo = useLoad(async () => await admin.git.repository(projectId, slug), [projectId, slug])
  const branches = useLoad(async () => await admin.git.branches(projectId, slug), [projectId, slug])
  const [chosen, setChosen] = useState<string | null>(null)
  const ref = chosen ?? repo.data?.defaultBranch ?? 'HEAD'
  const [folder, setFolder] = useState('')
  const [file, setFile] = useState<string | null>(null)
  const empty = repo.data?.empty === true
  const tree = useLoad(async () => empty || repo.data === null ? null : await admin.git.tree(projectId, slug, { ref, ...(folder === '' ? {} : { path: folder }) }), [projectId, slug, ref, folder, repo.data])
  const commits = useLoad(async () => empty || repo.data === null ? null : await admin.git.commits(projectId, slug, { ref }), [projectId, slug, ref, repo.data])
  const up = folder.includes('/') ? folder.slice(0, folder.lastIndexOf('/')) : ''
  return (
    <Page title={`Repository ${repo.data?.name ?? slug}`} crumbs={[['Organizations', '/organizations'], ['Repositories', `/projects/${encodeURIComponent(projectId)}/git`]]}>
      <ErrorNote error={repo.error ?? branches.error ?? tree.error ?? commits.error} />
      {repo.data !== null && <p>Clone: <code>{repo.data.cloneUrls.http}</code></p>}
      {empty && <p>No commit yet: the first push creates the default branch.</p>}
      {branches.data !== null && branches.data.length > 0 && (
        <label class='field'>
          <span>Branch</span>
          <select value={ref} onChange={(event) => { setChosen(event.currentTarget.value); setFolder(''); setFile(null) }}>
            {branches.data.map((branch) => <option key={branch.name} value={branch.name}>{branch.name}</option>)}
          </select>
        </label>
      )}
      {tree.data != null && (
        <table>
          <caption>Files in {folder === '' ? 'the root' : folder} at {ref}</caption>
          <thead><tr><th scope='col'>Name</th><th scope='col'>Kind</th></tr></thead>
          <tbody>
            {folder !== '' && <tr><td><button type='button' class='link' onClick={() => { setFolder(up); setFile(null) }}>Up to {up === '' ? 'the root' : up}</button></td><td>folder</td></tr>}
            {tree.data.entries.map((entry) => (
              <tr key={entry.path}>
                <td>
                  {entry.type === 'tree'
                    ? <button type='button' class='link' onClick={() => { setFolder(entry.path); setFile(null) }}>{entry.name}/</button>
                    : entry.type === 'blob' ? <button type='button' class='link' onClick={() => { setFile(entry.path) }}>{entry.name}</button> : entry.name}
                </td>
                <td>{entry.type === 'tree' ? 'folder' : entry.type === 'blob' ? 'file' : 'submodule'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {file !== null && <FileView projectId={projectId} slug={slug} ref={ref} path={file} />}
      {commits.data != null && (
        <>
          <h2>Latest commits on {ref}</h2>
          <ol class='list'>
            {commits.data.items.map((commit) => (
              <li key={commit.sha}><code>{commit.sha.slice(0, 10)}</code> {commit.title} ({commit.author.name}, {commit.author.date})</li>
            ))}
          </ol>
        </>
      )}
    </Page>
  )
}
