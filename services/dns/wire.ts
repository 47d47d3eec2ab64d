import * as packet from 'dns-packet'
import type { Answer, Question } from 'dns-packet'

// dns-packet's per-part codecs, which its typings leave out.
interface Codec<T> { encode: ((value: T, buf: Buffer, offset: number) => unknown) & { bytes: number }, encodingLength: (value: T) => number }
const codecs = packet as unknown as { answer: Codec<Answer>, question: Codec<Question> }

const HEADER_BYTES = 12
const QR = 0x8000

/** One record as dns-packet writes it into a message (it compresses no names, so a record's bytes do not depend on where they go). */
export function encodeRecord (record: Answer): Buffer {
  const bytes = Buffer.allocUnsafe(codecs.answer.encodingLength(record))
  codecs.answer.encode(record, bytes, 0)
  return bytes
}

export interface Response {
  id: number
  flags: number
  questions: Question[]
  answers: Answer[]
  authorities: Answer[]
  additionals: Answer[]
}

/**
 * The bytes `packet.encode` writes for a response, assembled from each
 * record's own bytes: those `encoded` knows (a zone's records, encoded once
 * per state of the zone, or a constant OPT record) are copied, the others
 * encoded here. With `limit`, a message longer than that comes back as null
 * before anything is written, so the caller can send a truncated one instead.
 */
export function encodeResponse (response: Response, encoded: (record: Answer) => Buffer | undefined, limit = Infinity): Buffer | null {
  const sections = [response.answers, response.authorities, response.additionals]
  const parts: Buffer[] = []
  let length = HEADER_BYTES
  for (const question of response.questions) length += codecs.question.encodingLength(question)
  for (const section of sections) {
    for (const record of section) {
      const bytes = encoded(record) ?? encodeRecord(record)
      parts.push(bytes)
      length += bytes.length
    }
  }
  if (length > limit) return null
  const message = Buffer.allocUnsafe(length)
  message.writeUInt16BE(response.id, 0)
  message.writeUInt16BE((response.flags & 0x7fff) | QR, 2)
  message.writeUInt16BE(response.questions.length, 4)
  message.writeUInt16BE(response.answers.length, 6)
  message.writeUInt16BE(response.authorities.length, 8)
  message.writeUInt16BE(response.additionals.length, 10)
  let offset = HEADER_BYTES
  for (const question of response.questions) {
    codecs.question.encode(question, message, offset)
    offset += codecs.question.encode.bytes
  }
  for (const bytes of parts) offset += bytes.copy(message, offset)
  return message
}
