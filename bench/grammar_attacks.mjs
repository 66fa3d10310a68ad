// bench/grammar_attacks.mjs K3 [LABEL]: measures the structured-output security review's rows 1-6 against `K3 serve`,
// started as the security review ran it (embedded k3-tiny, --api-key, --parallel 2,
// --request-timeout 5), a fresh server per row because VmHWM is the process's peak. For each
// row: bytes on the wire, the outcome, the time, and the server's RSS before, at its peak and
// after (VmRSS, VmHWM, VmRSS 1 s later); row 2 adds the hostile request's ms/token and a
// normal chat's ms/token alone and beside it. Prints a markdown table (bench/grammar_attacks.sh).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { exchange, processState, request } from '../tests/e2e/hostile_client.mjs';
import * as A from '../tests/e2e/grammar_attacks.mjs';
import { openStream, tokenEvents } from '../tests/e2e/sse_client.mjs';

const [k3, label = 'this build'] = process.argv.slice(2);
if (!k3 || !fs.existsSync(k3)) {
  console.error('usage: grammar_attacks.mjs K3_BINARY [LABEL]');
  process.exit(2);
}
const KEY = 'bench-key';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Starts a server; resolves to { pid, port, base, stop() } once it announced its port.
function startServer() {
  return new Promise((resolve, reject) => {
    const p = spawn(k3, ['serve', '--port', '0', '-c', '4096', '-t', '1', '--api-key', KEY, '--parallel', '2', '--request-timeout', '5'],
      { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    const fail = setTimeout(() => { p.kill('SIGKILL'); reject(new Error(`k3 serve did not start: ${log}`)); }, 60000);
    p.stderr.on('data', (d) => {
      log += d;
      const m = /http:\/\/127\.0\.0\.1:(\d+)/.exec(log);
      if (m && fail) {
        clearTimeout(fail);
        const port = Number(m[1]);
        resolve({ pid: p.pid, port, base: `http://127.0.0.1:${port}/v1`,
          stop: () => new Promise((r) => { p.once('exit', r); p.kill('SIGKILL'); }) });
      }
    });
    p.once('exit', (code) => { clearTimeout(fail); reject(new Error(`k3 serve exited ${code}: ${log}`)); });
  });
}

const post = (path, body) => request('POST', path, { key: KEY, headers: { 'Content-Type': 'application/json' },
  body: typeof body === 'string' ? body : JSON.stringify(body) });
const status = (r) => r.responses[0]?.status ?? 'none';
// "400: first words of the message" for a 4xx/5xx, the status alone otherwise.
function outcome(r) {
  const res = r.responses[0];
  if (!res) return `no answer in ${r.ms} ms`;
  if (res.status === 200) return '200';
  let msg = '';
  try { msg = JSON.parse(res.body).error.message; } catch { msg = res.body; }
  return `${res.status}: ${msg.replace(/\|/g, '/').slice(0, 70)}`;
}
// ms per token from the first token to the last: events come coalesced (several k3-tiny tokens
// in one read), so single gaps are mostly 0.
const msPerToken = (s) => { const t = tokenEvents(s).map((e) => e.t); return t.length > 1 ? (t.at(-1) - t[0]) / (t.length - 1) : NaN; };
const streamOutcome = (s) => (s.status !== 200 ? `${s.status}: ${s.body.slice(0, 60)}` : s.error ? `200, error event: ${String(s.error.message).slice(0, 60)}` : `200, ${s.finish ?? (s.timedOut ? 'timed out' : 'cut')}`);
const victimBody = { messages: [{ role: 'user', content: 'Count from 1 to 200, one number per line.' }], max_tokens: 300, temperature: 0, seed: 7 };

const rows = [
  { row: 1, what: '256 KiB rule name, "x"{0,1000} x4, gzip', run: async (srv) => {
    const wire = A.gzipRequest('/v1/chat/completions', A.chatBody({ grammar: A.longNameGrammar() }), KEY);
    const r = await exchange(srv.port, wire, { timeoutMs: 120000 });
    const head = wire.indexOf('\r\n\r\n') + 4;
    return { wire: wire.length, outcome: outcome(r), ms: r.ms, note: `gzip body ${wire.length - head} B, headers ${head} B` };
  } },
  { row: '2a', what: 'palindrome grammar (1.7 KB), 40 tokens, + a normal chat', run: async (srv) => {
    const quiet = await openStream(srv.base, KEY, '/v1/chat/completions', victimBody, { timeoutMs: 120000 });
    const body = A.chatBody({ grammar: A.palindromeGrammar(), max_tokens: 40, temperature: 1 });
    const hostile = openStream(srv.base, KEY, '/v1/chat/completions', body, { timeoutMs: 120000 });
    await sleep(300);
    const loaded = await openStream(srv.base, KEY, '/v1/chat/completions', victimBody, { timeoutMs: 120000 });
    const h = await hostile;
    return { wire: JSON.stringify(body).length, outcome: streamOutcome(h), ms: h.ms,
      note: `hostile ${msPerToken(h).toFixed(1)} ms/token (${tokenEvents(h).length} tokens); normal chat ${msPerToken(quiet).toFixed(2)} ms/token alone, ${msPerToken(loaded).toFixed(2)} beside it (${tokenEvents(loaded).length} tokens)` };
  } },
  { row: '2b', what: '4000 two-byte palindrome alternatives (104 KB), 4 tokens', run: async (srv) => {
    const body = A.chatBody({ grammar: A.twoBytePalindromeGrammar(), max_tokens: 4, temperature: 1 });
    const h = await openStream(srv.base, KEY, '/v1/chat/completions', body, { timeoutMs: 120000 });
    const t = tokenEvents(h);
    return { wire: JSON.stringify(body).length, outcome: streamOutcome(h), ms: h.ms,
      note: `${t.length} tokens, ${(t.length ? h.ms / t.length : NaN).toFixed(0)} ms/token` };
  } },
  { row: 3, what: 'palindrome, 60 tokens, both slots', run: async (srv) => {
    const body = (seed) => A.chatBody({ grammar: A.palindromeGrammar(), max_tokens: 60, temperature: 1, seed });
    const t0 = Date.now();
    const ss = await Promise.all([1, 2].map((seed) => openStream(srv.base, KEY, '/v1/chat/completions', body(seed), { timeoutMs: 180000 })));
    return { wire: 2 * JSON.stringify(body(1)).length, outcome: ss.map(streamOutcome).join('; '), ms: Date.now() - t0,
      note: `${ss.map((s) => tokenEvents(s).length).join('+')} tokens` };
  } },
  { row: 4, what: '`[a-z]{0,1000} ` x990 (14 KB), 6 at once', run: async (srv) => {
    const b = post('/v1/chat/completions', A.chatBody({ grammar: A.wideRepeatGrammar(), max_tokens: 2 }));
    const t0 = Date.now();
    const rs = await Promise.all(Array.from({ length: 6 }, () => exchange(srv.port, b, { timeoutMs: 120000 })));
    const seen = new Map();
    for (const o of rs.map(outcome)) seen.set(o, (seen.get(o) ?? 0) + 1);
    return { wire: 6 * b.length, outcome: [...seen].map(([o, n]) => `${n}x ${o}`).join('; '), ms: Date.now() - t0 };
  } },
  { row: '5a', what: 'chain of 40,000 rules', run: async (srv) => {
    const b = post('/v1/chat/completions', A.chatBody({ grammar: A.ruleChainGrammar(), max_tokens: 2 }));
    const r = await exchange(srv.port, b, { timeoutMs: 300000 });
    return { wire: b.length, outcome: outcome(r), ms: r.ms };
  } },
  { row: '5b', what: '$ref aliases: 3^10 spellings of a 1000-key object', run: async (srv) => {
    // Through /v1/completions: a chat would render the schema into its prompt and be refused
    // for the prompt's length before the compile could show its cost.
    const b = post('/v1/completions', { prompt: 'x', max_tokens: 2, json_schema: A.refAliasSchema() });
    const r = await exchange(srv.port, b, { timeoutMs: 300000 });
    return { wire: b.length, outcome: outcome(r), ms: r.ms };
  } },
  { row: 6, what: '/detokenize of 1.5 M ids, 4 at once', run: async (srv) => {
    const b = post('/detokenize', A.detokenizeBody(1500000));
    const t0 = Date.now();
    const rs = await Promise.all(Array.from({ length: 4 }, () => exchange(srv.port, b, { timeoutMs: 120000 })));
    return { wire: 4 * b.length, outcome: rs.map(status).join(','), ms: Date.now() - t0,
      note: `answer ${(rs[0].raw.length / 1048576).toFixed(1)} MiB each` };
  } },
];

const only = process.env.ROWS ? process.env.ROWS.split(',') : null;
const mib = (x) => x.toFixed(0);
const kb = (n) => (n < 10240 ? `${n} B` : `${(n / 1024).toFixed(0)} KiB`);
const lines = [`### ${label}`, '',
  '| row | attack | on the wire | outcome | time | RSS before → peak → after (MiB) | notes |', '|---|---|---|---|---|---|---|'];
for (const r of rows) {
  if (only && !only.includes(String(r.row))) continue;
  const srv = await startServer();
  try {
    await sleep(500);
    const before = processState(srv.pid).rssMiB;
    const t0 = Date.now();
    let res;
    try {
      res = await r.run(srv);
    } catch (e) {
      res = { wire: 0, outcome: `client error: ${e.message}`, ms: Date.now() - t0 };
    }
    const peak = processState(srv.pid).peakMiB;
    await sleep(1000);
    const st = processState(srv.pid);
    const line = `| ${r.row} | ${r.what} | ${kb(res.wire)} | ${st.alive ? res.outcome : 'server died'} | ${(res.ms / 1000).toFixed(2)} s | ` +
      `${mib(before)} → ${mib(Math.max(peak, st.peakMiB))} → ${mib(st.rssMiB)} | ${res.note ?? ''} |`;
    lines.push(line);
    console.error(line);
  } finally {
    await srv.stop();
  }
}
console.log(lines.join('\n'));
