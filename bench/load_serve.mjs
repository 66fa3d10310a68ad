// bench/load_serve.mjs: N concurrent streaming chat clients against a k3 serve for D seconds
// (node's built-in fetch, no dependencies). Prints requests/s and generated tokens/s.
// usage: node load_serve.mjs BASE_URL [clients=8] [seconds=60] [max_tokens=64]
const [base, clients = '8', seconds = '60', maxTokens = '64'] = process.argv.slice(2);
const deadline = Date.now() + Number(seconds) * 1000;
let requests = 0, tokens = 0, errors = 0;
const latencies = [];

async function one(i) {
  const t0 = Date.now();
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      messages: [{ role: 'user', content: `Client ${i}: tell me something.` }],
      max_tokens: Number(maxTokens), stream: true, stream_options: { include_usage: true },
      seed: i,
    }),
  });
  if (!res.ok) { errors++; await res.text(); return; }
  let buf = '';
  for await (const chunk of res.body) {
    buf += Buffer.from(chunk).toString('utf8');
    let k;
    while ((k = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, k); buf = buf.slice(k + 2);
      if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
      const j = JSON.parse(ev.slice(6));
      if (j.error) errors++;
      if (j.usage) tokens += j.usage.completion_tokens;
    }
  }
  requests++;
  latencies.push(Date.now() - t0);
}

async function worker(i) {
  while (Date.now() < deadline) {
    try { await one(i); } catch { errors++; }
  }
}

const start = Date.now();
await Promise.all(Array.from({ length: Number(clients) }, (_, i) => worker(i)));
const secs = (Date.now() - start) / 1000;
latencies.sort((a, b) => a - b);
const p = (q) => latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] : 0;
console.log(JSON.stringify({
  clients: Number(clients), seconds: +secs.toFixed(1), requests, errors,
  requests_per_s: +(requests / secs).toFixed(2), tokens, tokens_per_s: +(tokens / secs).toFixed(1),
  latency_ms_p50: p(0.5), latency_ms_p95: p(0.95),
}));
