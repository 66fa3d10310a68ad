// tests/e2e/grammar_attacks.mjs: the grammar and schema attacks of the structured-output security review as request bodies,
// shared by tests/e2e/hostile_grammar.test.mjs (which asserts the server survives them) and
// bench/grammar_attacks.mjs (which measures what they cost). Each builder returns plain data
// (a GBNF string, a schema object or a request body object), so the sizes the issue quotes can
// be checked here once and not re-derived by every caller.
import zlib from 'node:zlib';
import { request } from './hostile_client.mjs';

export const hi = [{ role: 'user', content: 'hi' }];
// The answer is constrained, the reasoning is not: thinking off, so every generated token goes
// through the matcher from the first one.
export const NO_THINK = { reasoning_effort: 'none' };

// A GBNF literal for one character.
const lit = (ch) => `"${ch === '"' || ch === '\\' ? '\\' + ch : ch}"`;
const hex2 = (c) => `\\x${c.toString(16).padStart(2, '0')}`;

// Row 1: `root ::= A`, `A ::= "x"{0,1000}` four times, with A a 262,144-byte name. Every
// optional step of each {0,1000} became a generated rule whose name copied A's: 4000 copies of
// 256 KiB, ~1 GiB, from half a megabyte of text that gzip folds to a few hundred bytes.
export function longNameGrammar(nameBytes = 262144) {
  const a = 'a'.repeat(nameBytes);
  return `root ::= ${a}\n${a} ::= ${Array(4).fill('"x"{0,1000}').join(' ')}\n`;
}

// Row 2/3: palindromes (odd and even) over the 95 printable ASCII bytes. Every position may be the middle,
// so the parses alive grow with the output, and every token of the vocabulary must be tried
// against all of them.
export function palindromeGrammar() {
  const alts = [];
  for (let c = 0x20; c < 0x7f; ++c) {
    const l = lit(String.fromCharCode(c));
    alts.push(`${l} r ${l} | ${l}`);
  }
  return `root ::= r\nr ::= ( ${alts.join(' | ')} )?\n`;
}

// Row 2: the same shape over 4000 two-byte pieces, spelled with \x escapes (~104 KB).
export function twoBytePalindromeGrammar(n = 4000) {
  const alts = [];
  for (let i = 0; i < n; ++i) {
    const p = hex2(0x21 + (i % 94)) + hex2(0x21 + Math.floor(i / 94));
    alts.push(`"${p}" r "${p}"`);
  }
  return `root ::= r\nr ::= ( ${alts.join(' | ')} )?\n`;
}

// Row 4: 990 bounded repetitions of a class (14 KB), each {0,1000} a thousand rules.
export const wideRepeatGrammar = (n = 990) => 'root ::= ' + '[a-z]{0,1000} '.repeat(n);

// Row 5a: a chain of rules, each naming the next (~760 KB at 40,000).
export function ruleChainGrammar(n = 40000) {
  let g = 'root ::= r0\n';
  for (let i = 0; i < n - 1; ++i) g += `r${i} ::= "a" r${i + 1}\n`;
  return g + `r${n - 1} ::= "a"\n`;
}

// Row 5b: 3^depth spellings of one node. `$defs.n` is the target wrapped in `depth` one-element
// arrays; a JSON pointer may spell each index 0 as "0", "00" or "000", so the anyOf below names
// the same node 59,049 times in 59,049 different strings (3.0 MB). The target is a `const`
// object of 1000 keys: its ~10 KB literal is written inline, so a compiler that memoises on
// the spelling writes it 59,049 times (~600 MB) before its size check at the end (b3e1fee:
// 14.7 s and 742 MiB on a busy 2-core VM, then a 400).
export function refAliasSchema({ depth = 10, keys = 1000 } = {}) {
  const target = {};
  for (let i = 0; i < keys; ++i) target[`k${i}`] = 0;
  let n = { const: target };
  for (let i = 0; i < depth; ++i) n = [n];
  const refs = [];
  const spell = ['0', '00', '000'];
  const total = 3 ** depth;
  for (let k = 0; k < total; ++k) {
    let p = '#/$defs/n';
    for (let d = 0, x = k; d < depth; ++d, x = Math.floor(x / 3)) p += '/' + spell[x % 3];
    refs.push({ $ref: p });
  }
  return { $defs: { n }, anyOf: refs };
}

// Row 9: an array index in a $ref past 2^64 (std::stoul threw out_of_range: a 500).
export const refIndexOverflowSchema = () => ({
  type: 'object',
  properties: { x: { $ref: '#/$defs/a/99999999999999999999999' } },
  required: ['x'],
  $defs: { a: [{ type: 'string' }] },
});

// Row 9: a string enum of `n` values sharing prefixes (w0, w1, w10, w100, ...), which the old
// matcher held as n parses at once.
export const enumValues = (n, pad = 0) => Array.from({ length: n }, (_, i) => `w${i}` + 'z'.repeat(pad));
export const enumSchema = (values) => ({ type: 'string', enum: values });

// response_format for a schema, strict (keywords that cannot be honoured are a 400).
export const schemaFormat = (schema, strict = true) => ({ type: 'json_schema', json_schema: { name: 'out', schema, strict } });

// A chat body with the hostile part merged in; short answers unless the caller says otherwise.
export const chatBody = (fields) => ({ messages: hi, max_tokens: 8, seed: 1, ...NO_THINK, ...fields });

// Row 1 on the wire: the body gzip-compressed, as the whole HTTP request (Buffer).
export function gzipRequest(path, body, key) {
  const gz = zlib.gzipSync(Buffer.from(JSON.stringify(body)), { level: 9 });
  return request('POST', path, { key, headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }, body: gz });
}

// Row 6: /detokenize of n ids (single-digit ids keep the body small: ~2 bytes an id).
export const detokenizeBody = (n) => `{"tokens":[${Array(n).fill('5').join(',')}]}`;
