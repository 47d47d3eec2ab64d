/**
 * MongoDB's query, update, sort and projection semantics for the Store
 * subset, as pure functions. The embedded engine uses them as its reference;
 * compile once (compileFilter, compileUpdate, compileSort, compileProjection)
 * when applying to many documents.
 */
export { compileFilter, matches, validateFilter } from './match.js'
export { applyUpdate, compileUpdate, validateUpdate } from './update.js'
export type { CompiledUpdate, UpdateOptions, UpdateOutcome } from './update.js'
export { seedFromFilter, upsertSeed } from './seed.js'
export { applyProjection, compileProjection, validateProjection } from './project.js'
export { compileSort, sortDocuments, validateSort } from './sort.js'
export { cloneValue, compareValues, deepEqual } from './values.js'
export { MAX_DOCUMENT_BYTES, MAX_DOCUMENT_DEPTH, checkDocumentBounds, validateDocument, validateStoredValue } from './documents.js'
export { MAX_COLLECTION_NAME_BYTES, validateCollectionName } from './names.js'
export { MAX_WRITE_DOCUMENTS, checkWriteCount, withoutNegativeZero } from './writes.js'
export { MAX_INDEXES, checkDropIndex, existingIndex, indexSpec, parallelArrays, type IndexSpec } from './indexes.js'
export { validateCount } from './options.js'
