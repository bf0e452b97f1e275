/**
 * Reads a byte stream (a served sample or a user's file) as UTF-8 text, reporting bytes read as it goes, so a
 * large trace shows a moving progress bar instead of a frozen page. Runs in the import worker.
 */
export async function readStreamText(
  stream: ReadableStream<Uint8Array>,
  total: number,
  onProgress: (done: number, total: number) => void,
): Promise<string> {
  const reader = stream.getReader();
  const decoder = new TextDecoder('utf-8');
  const parts: string[] = [];
  let done = 0;
  for (;;) {
    const r = await reader.read();
    if (r.done) break;
    done += r.value.byteLength;
    parts.push(decoder.decode(r.value, { stream: true }));
    onProgress(done, Math.max(total, done));
  }
  parts.push(decoder.decode());
  return parts.join('');
}
