/** A line longer than this is passed on in pieces, so output without newlines cannot grow memory. */
export const MAX_LINE_CHARS = 16 * 1024

/**
 * Cuts text into lines (a trailing CR dropped); a partial line waits for its
 * end, or for `flush`. Lines of more than `maxChars` go on in pieces of that
 * length, so what it holds stays bounded whatever the output.
 */
export class LineSplitter {
  private pending = ''
  constructor (private readonly onLine: (line: string) => void, private readonly maxChars = MAX_LINE_CHARS) {}

  push (text: string): void {
    const parts = (this.pending + text).split('\n')
    this.pending = parts.pop() ?? ''
    for (const part of parts) this.pass(part.endsWith('\r') ? part.slice(0, -1) : part)
    if (this.pending.length >= this.maxChars) {
      const whole = this.pending.length - this.pending.length % this.maxChars
      this.pass(this.pending.slice(0, whole))
      this.pending = this.pending.slice(whole)
    }
  }

  flush (): void {
    if (this.pending !== '') this.pass(this.pending)
    this.pending = ''
  }

  private pass (line: string): void {
    if (line.length <= this.maxChars) { this.onLine(line); return }
    for (let start = 0; start < line.length; start += this.maxChars) this.onLine(line.slice(start, start + this.maxChars))
  }
}
