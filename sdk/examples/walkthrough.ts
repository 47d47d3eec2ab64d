/**
 * The README's walk-through through the SDK: a platform user signs up, makes
 * an organization, a project and a collection; an end user signs up, writes
 * and lists notes, uploads a scan and downloads it. Compiled under `strict`
 * without a cast (`npm run typecheck`), and run against a live server by
 * test/sdk/walkthrough.test.ts.
 */
import { createAdmin } from '../admin/index.js'
import { createClient, type UploadProgress } from '../client/index.js'
import type { Collections } from './collections.js'

export async function walkThrough (baseUrl: string, scan: Uint8Array<ArrayBuffer>) {
  const admin = createAdmin({ baseUrl })
  await admin.auth.register({ email: 'ada@example.com', password: 'correct horse battery', name: 'Ada' })
  await admin.auth.login({ email: 'ada@example.com', password: 'correct horse battery' })
  const pat = await admin.tokens.create({ name: 'laptop' })
  admin.useToken(pat.token)

  const org = await admin.organizations.create({ name: 'Analytical Engines' })
  const project = await admin.projects.create({ orgId: org.id, name: 'Notes' })
  await admin.projects.setAuth(project.id, true)
  const own = { enabled: true, rule: { requireAuth: true, owner: 'author' } }
  await admin.collections.create(project.id, {
    name: 'notes',
    fields: [
      { name: 'title', type: 'text', required: true, max: 200 },
      { name: 'author', type: 'text' },
      { name: 'tags', type: 'select', values: ['idea', 'todo'], multiple: true },
      { name: 'scan', type: 'file' }
    ],
    indexes: [{ fields: ['author', '-createdAt'] }],
    methods: { list: own, get: own, create: own, update: own, upload: own, download: own }
  })

  const client = createClient<Collections>({ baseUrl, projectId: project.id })
  const session = await client.auth.signUp({ email: 'bob@example.com', password: 'long enough 1' })
  const notes = client.collection('notes')
  const first = await notes.create({ title: 'First', tags: ['idea'] })
  await notes.create({ title: 'Second', tags: ['todo'] })
  const page = await notes.list({ filter: { tags: { $all: ['idea'] } }, sort: ['-createdAt', 'title'], limit: 10 })
  const titles: string[] = []
  for await (const note of notes.iterate({ sort: 'title', limit: 1 })) titles.push(note.title)
  const edited = await notes.update(first.id, { title: 'First, edited' }, { ifMatch: first })

  const progress: UploadProgress[] = []
  const uploaded = await notes.upload(first.id, 'scan', new Blob([scan]), { name: 'scan.bin', onProgress: (step) => progress.push(step) })
  const download = await notes.download(first.id, 'scan', uploaded.file.id)
  const parts: Uint8Array[] = []
  for await (const part of download.stream) parts.push(part)

  return { admin, client, pat, org, project, session, first, page, titles, edited, uploaded, progress, download, parts }
}
