// tests/e2e/sse_client.mjs: a streamed request (server-sent events) with the arrival time of
// every event, for the tests that bound a stream's length or measure its per-token latency
// (hostile_grammar.test.mjs, grammar_victim.test.mjs, bench/grammar_attacks.mjs).

// A streamed POST to `base` (without its /v1) + `path` through fetch, with each SSE event's
// arrival time (ms from the start). `abortAfterMs` or `signal` hang up on purpose (not a
// timeout). Resolves to { status, body (non-200), events: [{t, data, json}], ms, ended, error,
// finish, timedOut }.
export async function openStream(base, key, path, body, { timeoutMs = 30000, abortAfterMs = 0, signal = null } = {}) {
  const t0 = performance.now();
  const ac = new AbortController();
  let onPurpose = false;
  const timer = setTimeout(() => { onPurpose = abortAfterMs > 0; ac.abort(); }, abortAfterMs || timeoutMs);
  signal?.addEventListener('abort', () => { onPurpose = true; ac.abort(); });
  const out = { status: 0, body: '', events: [], ms: 0, ended: false, error: null, finish: null, timedOut: false };
  try {
    const res = await fetch(base.replace(/\/v1$/, '') + path, {
      method: 'POST', signal: ac.signal,
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...body, stream: true }),
    });
    out.status = res.status;
    if (res.status !== 200) {
      out.body = await res.text();
    } else {
      const dec = new TextDecoder();
      let buf = '';
      for await (const chunk of res.body) {
        buf += dec.decode(chunk, { stream: true });
        for (let i; (i = buf.indexOf('\n\n')) >= 0;) {
          const ev = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const data = ev.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
          if (!data) continue;
          if (data === '[DONE]') { out.ended = true; continue; }
          let json = null;
          try { json = JSON.parse(data); } catch { /* kept as text */ }
          out.events.push({ t: performance.now() - t0, data, json });
          if (json?.error) out.error = json.error;
          const fr = json?.choices?.[0]?.finish_reason;
          if (fr) out.finish = fr;
        }
      }
    }
  } catch {
    out.timedOut = !onPurpose;
  } finally {
    clearTimeout(timer);
  }
  out.ms = performance.now() - t0;
  return out;
}
// Events that carry generated text (content, reasoning or completion text).
export const tokenEvents = (s) => s.events.filter((e) => {
  const c = e.json?.choices?.[0];
  return c && ((c.delta && (c.delta.content || c.delta.reasoning_content)) || c.text);
});
// The largest gap between consecutive events (the first measured from the request's start).
export const maxGap = (s) => s.events.reduce((m, e, i) => Math.max(m, e.t - (i ? s.events[i - 1].t : 0)), 0);

