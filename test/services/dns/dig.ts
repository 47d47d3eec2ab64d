import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { parse } from 'yaml'

const run = promisify(execFile)

export interface DigAnswer {
  status: string
  flags: string[]
  answer: string[]
  authority: string[]
  additional: string[]
  /** The whole output, for messages. */
  raw: string
}

/**
 * Asks the real `dig` (bind9-dnsutils) and reads its YAML output. Arguments
 * go to execFile as a list, never through a shell. Records come back as
 * dig prints them: `www.example.com. 300 IN A 192.0.2.1`, blanks collapsed.
 */
export async function dig (port: number, name: string, type: string, ...options: string[]): Promise<DigAnswer> {
  const { stdout } = await run('dig', ['@127.0.0.1', '-p', String(port), name, type, '+yaml', '+time=3', '+tries=1', ...options], { timeout: 15_000 })
  const messages = (parse(stdout) as Array<{ type: string, message?: { response_message_data?: Record<string, unknown> } }> | null) ?? []
  const response = messages.find((entry) => entry.type === 'MESSAGE')?.message?.response_message_data
  if (response === undefined) throw new Error(`dig gave no response: ${stdout}`)
  const section = (key: string) => ((response[key] as string[] | undefined) ?? []).map((line) => line.replace(/\s+/g, ' ').trim())
  return {
    status: String(response.status),
    flags: String(response.flags ?? '').split(/\s+/).filter((flag) => flag !== ''),
    answer: section('ANSWER_SECTION'),
    authority: section('AUTHORITY_SECTION'),
    additional: section('ADDITIONAL_SECTION'),
    raw: stdout
  }
}

/** Every message of an AXFR as dig prints it in plain text; with `+tcp` implied. */
export async function digTransfer (port: number, zone: string): Promise<string> {
  const { stdout } = await run('dig', ['@127.0.0.1', '-p', String(port), zone, 'AXFR', '+time=3', '+tries=1'], { timeout: 15_000 })
  return stdout
}
