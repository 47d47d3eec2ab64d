import type { Http } from '../core/http.js'
import { expectOk, unwrap } from '../core/http.js'
import { PlinthError } from '../core/errors.js'
import type { Filter, ListQuery, Page, RecordOf, Values } from './types.js'
import { downloadFile, uploadFile, type DownloadOptions, type UploadOptions, type UploadResult } from './files.js'

/** What a conditional write compares: a version number, or the record last read (its `version`). */
export type IfMatch = number | { version: number }

/** The `If-Match` header for a version (the server's ETag is the quoted version). */
export function ifMatch (expected: IfMatch): string {
  return `"${String(typeof expected === 'number' ? expected : expected.version)}"`
}

export interface BulkUpdate<Fields> {
  filter: Filter<Fields>
  set: Values<Fields>
  dryRun?: boolean
  maxAffected?: number
}

export interface BulkDelete<Fields> {
  filter: Filter<Fields>
  dryRun?: boolean
  maxAffected?: number
}

/** One collection of a project, as its end user (or anyone the rules let in) reaches it through the data API. */
export class Collection<Fields extends object> {
  constructor (private readonly http: Http, readonly projectId: string, readonly name: string) {}

  private get path (): { projectId: string, table: string } {
    return { projectId: this.projectId, table: this.name }
  }

  /** One page. Follow `nextCursor`, or use `iterate`, which does. */
  async list (query: ListQuery<Fields> = {}): Promise<Page<Fields>> {
    const page = await unwrap(this.http.api.GET('/api/p/{projectId}/{table}', {
      params: {
        path: this.path,
        query: {
          filter: query.filter === undefined ? undefined : JSON.stringify(query.filter),
          sort: query.sort === undefined ? undefined : [query.sort].flat().join(','),
          limit: query.limit,
          cursor: query.cursor,
          fields: query.fields?.join(','),
          count: query.count
        }
      }
    }))
    return page as Page<Fields>
  }

  /** Every page in turn, following cursors until the last. */
  async * pages (query: ListQuery<Fields> = {}): AsyncGenerator<Page<Fields>> {
    let cursor = query.cursor
    do {
      const page = await this.list({ ...query, cursor })
      yield page
      cursor = page.nextCursor ?? undefined
    } while (cursor !== undefined)
  }

  /** Every matching record, page after page: `for await (const post of posts.iterate({ sort: '-createdAt' }))`. */
  async * iterate (query: ListQuery<Fields> = {}): AsyncGenerator<RecordOf<Fields>> {
    for await (const page of this.pages(query)) yield * page.items
  }

  async get (id: string): Promise<RecordOf<Fields>> {
    return await unwrap(this.http.api.GET('/api/p/{projectId}/{table}/{id}', { params: { path: { ...this.path, id } } })) as RecordOf<Fields>
  }

  async create (values: Values<Fields>): Promise<RecordOf<Fields>> {
    return await unwrap(this.http.api.POST('/api/p/{projectId}/{table}', { params: { path: this.path }, body: values })) as RecordOf<Fields>
  }

  /** Changes the fields given; with `ifMatch`, only if the record is still at that version (412 `APP_VERSION_MISMATCH` otherwise). */
  async update (id: string, values: Values<Fields>, options: { ifMatch?: IfMatch } = {}): Promise<RecordOf<Fields>> {
    return await unwrap(this.http.api.PUT('/api/p/{projectId}/{table}/{id}', {
      params: { path: { ...this.path, id }, header: options.ifMatch === undefined ? undefined : { 'if-match': ifMatch(options.ifMatch) } },
      body: values
    })) as RecordOf<Fields>
  }

  async delete (id: string, options: { ifMatch?: IfMatch } = {}): Promise<void> {
    await expectOk(this.http.api.DELETE('/api/p/{projectId}/{table}/{id}', {
      params: { path: { ...this.path, id }, header: options.ifMatch === undefined ? undefined : { 'if-match': ifMatch(options.ifMatch) } }
    }))
  }

  /** Sets fields on every record the filter (and the update rule) selects, all or nothing. */
  async updateMany (request: BulkUpdate<Fields>): Promise<{ matched: number, modified: number }> {
    return await unwrap(this.http.api.PATCH('/api/p/{projectId}/{table}', { params: { path: this.path }, body: request }))
  }

  async deleteMany (request: BulkDelete<Fields>): Promise<{ matched: number, deleted: number }> {
    return await unwrap(this.http.api.DELETE('/api/p/{projectId}/{table}', { params: { path: this.path }, body: request }))
  }

  /** Uploads a file into a file field in chunks (see UploadOptions: progress, resume, sha256). */
  async upload (id: string, field: Extract<keyof Fields, string>, file: Blob, options: UploadOptions = {}): Promise<UploadResult<RecordOf<Fields>>> {
    const result = await uploadFile(this.http, { ...this.path, id, field }, file, options)
    return result as UploadResult<RecordOf<Fields>>
  }

  /** A file's bytes as a stream, with its type and size. */
  async download (id: string, field: Extract<keyof Fields, string>, fileId: string, options: DownloadOptions = {}) {
    return await downloadFile(this.http, { ...this.path, id, field, fileId }, options)
  }
}

export { PlinthError }
