// tests/e2e/grammar_victim.test.mjs: one client's hostile grammar must not slow the others
// (the structured-output review, row 2: masks computed on the thread that decodes for every client took a normal
// chat from 1.8 to 203.6 ms a token). Against run.sh's grammar server (embedded k3-tiny,
// --parallel 2): a normal streamed chat's per-token latency is measured alone
// (quiet), then again while the palindrome grammar decodes on the other slot. The victim's
// decode time per token must stay within 2x of quiet, or the hostile request must have been
// refused (4xx). Rates over >= 30 tokens, quiet measured right before each loaded run, and one
// retry of the pair, so that a noisy 2-core VM does not fail it; the old code is ~100x, not 2x.
// Needs K3_BASE_URL and K3_API_KEY.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as A from './grammar_attacks.mjs';
import { openStream, tokenEvents } from './sse_client.mjs';

const base = process.env.K3_BASE_URL;
const KEY = process.env.K3_API_KEY;
const MIN_TOKENS = 30;
const RATIO = 2;

// A normal chat that writes a while (k3-tiny, greedy: ~86 tokens, thinking included).
const victimBody = { messages: [{ role: 'user', content: 'Count from 1 to 200, one number per line.' }],
  max_tokens: 300, temperature: 0, seed: 7 };

// The victim's decode time per token: from its first token to its last (the prefill is left
// out), over the tokens that came. Events arrive coalesced (several tokens of k3-tiny in one
// read), so single gaps are mostly 0 and their median says nothing; the span does. A victim
// still writing after `capMs` is cut there and its span runs to the cut, so the old code's
// ~1 s/token is measured in half a minute instead of waited out.
async function victimMsPerToken(capMs) {
  const s = await openStream(base, KEY, '/v1/chat/completions', victimBody, { abortAfterMs: capMs });
  assert.equal(s.status, 200, s.body.slice(0, 300));
  const t = tokenEvents(s).map((e) => e.t);
  assert.ok(t.length >= 2, `the victim wrote ${t.length} tokens in ${capMs} ms`);
  const end = s.ended || s.finish ? t.at(-1) : s.ms;
  return { msPerToken: (end - t[0]) / (t.length - 1), tokens: t.length };
}

// One quiet run, then one beside the hostile stream. Returns both rates and the hostile outcome.
async function pair() {
  // Quiet: the median of three runs (each is only ~0.1 s of decoding on k3-tiny).
  const runs = [];
  for (let i = 0; i < 3; ++i) runs.push(await victimMsPerToken(60000));
  const quiet = runs.sort((a, b) => a.msPerToken - b.msPerToken)[1];
  assert.ok(quiet.tokens >= MIN_TOKENS, `the quiet victim wrote only ${quiet.tokens} tokens`);
  const stop = new AbortController();
  const hostile = openStream(base, KEY, '/v1/chat/completions',
    A.chatBody({ grammar: A.palindromeGrammar(), max_tokens: 4000, temperature: 1, seed: 11 }),
    { timeoutMs: 300000, signal: stop.signal });
  // Let the hostile request take its slot and reach its first masks before the victim starts.
  await new Promise((r) => setTimeout(r, 300));
  const loaded = await victimMsPerToken(30000);
  stop.abort();
  const h = await hostile;
  return { quiet: quiet.msPerToken, loaded: loaded.msPerToken, n: `${quiet.tokens}/${loaded.tokens}`, hostile: h };
}

test('a hostile grammar on one slot leaves the other slot\'s per-token latency within 2x', { timeout: 600000 }, async () => {
  let p = await pair();
  const show = (x) => `quiet ${x.quiet.toFixed(2)} ms/token, beside the palindrome ${x.loaded.toFixed(2)} ms/token ` +
    `(tokens quiet/loaded ${x.n}; hostile: ${x.hostile.status} ${x.hostile.error ? 'error event' : x.hostile.finish ?? 'still running'}, ${tokenEvents(x.hostile).length} tokens)`;
  console.log(`victim: ${show(p)}`);
  if (p.hostile.status >= 400 && p.hostile.status < 500) return;  // refused: it cost nobody anything
  if (p.loaded > RATIO * p.quiet) {  // once more, in case the VM was busy
    p = await pair();
    console.log(`victim (retry): ${show(p)}`);
  }
  assert.equal(p.hostile.status, 200, p.hostile.body.slice(0, 300));
  assert.ok(p.loaded <= RATIO * p.quiet, `the victim went from ${p.quiet.toFixed(2)} to ${p.loaded.toFixed(2)} ms/token beside a hostile grammar (> ${RATIO}x)`);
});
