// k3 serve's chat page: behaviour (structure is index.html, looks chat.css).
// Conversations live in this browser's localStorage; the server keeps nothing between
// requests. Each answer streams from /v1/chat/completions (server-sent events) and is
// rendered as it arrives: reasoning as plain text in a collapsible block, the answer as
// markdown through marked and then DOMPurify, tool calls as text. Model output never
// reaches the page except through DOMPurify (an allowlist: no element or attribute that
// loads anything, no id or name) or textContent, and the page's Content-Security-Policy
// refuses inline script and foreign loads besides. The page's own elements are held from
// start-up (ui), never looked up again, so rendered content cannot stand in for them.
// A streaming answer is saved at most once a second, and at once when the page goes away.
'use strict';

const KEY_PREFIX = 'k3chat.';
const DEFAULTS = { temperature: 0.7, top_p: 0.95, max_tokens: 1024, reasoning_effort: '', system: '', tools: '' };

const saved = {
  get(name, fallback) {
    try {
      const v = localStorage.getItem(KEY_PREFIX + name);
      return v === null ? fallback : JSON.parse(v);
    } catch {
      return fallback;
    }
  },
  set(name, value) {
    try {
      localStorage.setItem(KEY_PREFIX + name, JSON.stringify(value));
    } catch (e) {
      showError(`could not save in this browser: ${e.message}`);
    }
  },
};

const state = {
  settings: Object.assign({}, DEFAULTS, saved.get('settings', {})),
  convs: saved.get('conversations', []),  // [{id, title, messages, updated}], newest first
  currentId: saved.get('current', null),
  apiKey: saved.get('apiKey', ''),
  running: null,  // {controller, conv, msg} while an answer streams
};

// Every element the page uses, looked up once, now: the script is deferred, so the document
// is parsed and no model output is in it yet. A lookup made later (getElementById, a named
// property of document or window) could be answered by an element inside a rendered answer
// that carries the same id or name — `<data id="input" value="…">` comes before the real
// textarea in document order (DOM clobbering, issue 41 row 7). References held from here on
// cannot be redirected, and the sanitiser drops id and name besides (SANITIZE below).
function byId(id) {
  const found = document.getElementById(id);
  if (!found) throw new Error(`chat page: index.html has no #${id}`);
  return found;
}
const ui = Object.freeze({
  error: byId('error'),
  keyDialog: byId('key-dialog'),
  keyError: byId('key-error'),
  keyInput: byId('key-input'),
  keyOk: byId('key-ok'),
  propModel: byId('prop-model'),
  propCtx: byId('prop-ctx'),
  propSlots: byId('prop-slots'),
  convList: byId('conv-list'),
  convTitle: byId('conv-title'),
  messages: byId('messages'),
  speed: byId('speed'),
  input: byId('input'),
  send: byId('send'),
  stop: byId('stop'),
  newChat: byId('new-chat'),
  settings: byId('settings'),
  settingsToggle: byId('settings-toggle'),
  forgetKey: byId('forget-key'),
  settingInputs: Object.freeze(Object.fromEntries(Object.keys(DEFAULTS).map((name) => [name, byId(`set-${name}`)]))),
});
// The two libraries, taken from window now for the same reason (index.html runs them first).
const markdownLib = window.marked;
const purifier = window.DOMPurify;

function showError(text) {
  const box = ui.error;
  box.textContent = text;
  box.hidden = !text;
}

function authHeaders() {
  return state.apiKey ? { Authorization: `Bearer ${state.apiKey}` } : {};
}

// Resolves once the user has entered a key (the server answered 401).
function askKey(refused) {
  return new Promise((resolve) => {
    const dialog = ui.keyDialog;
    ui.keyError.hidden = !refused;
    ui.keyInput.value = '';
    const ok = () => {
      const key = ui.keyInput.value.trim();
      if (!key) return;
      state.apiKey = key;
      saved.set('apiKey', key);
      dialog.close();
      ui.keyOk.removeEventListener('click', ok);
      resolve();
    };
    ui.keyOk.addEventListener('click', ok);
    ui.keyInput.onkeydown = (e) => { if (e.key === 'Enter') ok(); };
    if (!dialog.open) dialog.showModal();
  });
}

// fetch with the API key; asks for a key (again) while the server answers 401.
async function api(path, init = {}) {
  for (let attempt = 0; ; ++attempt) {
    const res = await fetch(path, { ...init, headers: { ...(init.headers || {}), ...authHeaders() } });
    if (res.status !== 401) return res;
    await askKey(attempt > 0 || state.apiKey !== '');
  }
}

async function errorText(res) {
  try {
    const j = await res.json();
    return j.error?.message || `HTTP ${res.status}`;
  } catch {
    return `HTTP ${res.status}`;
  }
}

async function loadProps() {
  try {
    const res = await api('/props');
    if (!res.ok) throw new Error(await errorText(res));
    const p = await res.json();
    ui.propModel.textContent = p.model_alias || '?';
    ui.propCtx.textContent = `${p.default_generation_settings?.n_ctx ?? '?'} tokens`;
    ui.propSlots.textContent = String(p.total_slots ?? '?');
  } catch (e) {
    showError(`cannot read the server's properties: ${e.message}`);
  }
}

// ---- conversations -------------------------------------------------------------------

function currentConv() {
  return state.convs.find((c) => c.id === state.currentId) || null;
}

function saveConvs() {
  saved.set('conversations', state.convs);
  saved.set('current', state.currentId);
}

// Set from pagehide until pageshow: the page is going away (or into the back/forward cache).
let pageLeaving = false;

function saveIfStreaming() {
  if (state.running) saveConvs();
}

function newConv() {
  const conv = { id: `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`, title: 'New chat',
                 messages: [], updated: Date.now() };
  state.convs.unshift(conv);
  state.currentId = conv.id;
  return conv;
}

function selectConv(id) {
  if (state.running) return;
  state.currentId = id;
  saveConvs();
  renderAll();
}

function deleteConv(id) {
  if (state.running && state.running.conv.id === id) return;
  state.convs = state.convs.filter((c) => c.id !== id);
  if (state.currentId === id) state.currentId = state.convs[0]?.id ?? null;
  saveConvs();
  renderAll();
}

function renderConvList() {
  const list = ui.convList;
  list.replaceChildren();
  for (const c of state.convs) {
    const li = document.createElement('li');
    if (c.id === state.currentId) li.className = 'current';
    const open = document.createElement('button');
    open.className = 'conv-open';
    open.textContent = c.title;
    open.title = c.title;
    open.addEventListener('click', () => selectConv(c.id));
    const del = document.createElement('button');
    del.className = 'conv-delete';
    del.textContent = '×';
    del.title = 'Delete this conversation';
    del.addEventListener('click', () => deleteConv(c.id));
    li.append(open, del);
    list.append(li);
  }
  ui.convTitle.textContent = currentConv()?.title ?? 'k3 chat';
}

// ---- rendering -----------------------------------------------------------------------

// What an answer's HTML may keep: what markdown makes (text formatting, links, lists,
// tables, code) and nothing that loads a resource or names an element. An allowlist, so a
// tag or attribute DOMPurify allows by default later is not let in unseen.
// - No element that loads media or a document, listed again in FORBID_TAGS so that the
//   rule outlives a change to the allowlist: each would be a request to wherever the model
//   says, on every re-render (the CSP blocks it too, but only as a second layer).
// - No attribute that names a URL to load (src, srcset, poster, background, data, …): links
//   keep href, which loads nothing until clicked, and open in a new tab (hook in init()).
// - No id or name (DOM clobbering, see ui above). Dropped rather than prefixed with
//   SANITIZE_NAMED_PROPS: the page links to nothing inside an answer (marked's headerIds are
//   off), so a kept, renamed id would serve nothing and could still collide with a future
//   page id that happened to start with the prefix.
// - class only as marked writes it on code blocks (language-*), so an answer cannot dress
//   itself in the page's own classes (a fake user message or error note).
const SANITIZE = Object.freeze({
  ALLOWED_TAGS: ['a', 'abbr', 'b', 'blockquote', 'br', 'code', 'dd', 'del', 'details', 'div', 'dl', 'dt', 'em',
                 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'i', 'ins', 'kbd', 'li', 'mark', 'ol', 'p', 'pre', 'q',
                 's', 'samp', 'small', 'span', 'strong', 'sub', 'summary', 'sup', 'table', 'tbody', 'td', 'tfoot',
                 'th', 'thead', 'tr', 'u', 'ul', 'var'],
  ALLOWED_ATTR: ['href', 'title', 'class', 'align', 'start', 'colspan', 'rowspan', 'open', 'lang', 'dir'],
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
  FORBID_TAGS: ['img', 'image', 'picture', 'video', 'audio', 'source', 'track', 'embed', 'object', 'applet', 'iframe',
                'frame', 'frameset', 'portal', 'link', 'meta', 'base', 'style', 'svg', 'math', 'form', 'input',
                'button', 'textarea', 'select'],
  FORBID_ATTR: ['id', 'name', 'style', 'src', 'srcset', 'poster', 'background', 'data', 'codebase', 'lowsrc',
                'dynsrc', 'formaction', 'action', 'xlink:href', 'ping', 'imagesrcset', 'manifest'],
  RETURN_DOM_FRAGMENT: true,
});

// Markdown → HTML → DOMPurify, as a fragment (no second parse of the sanitised HTML).
// null when the libraries fail: the caller then shows plain text, never unsanitised HTML.
function markdown(text) {
  try {
    const html = markdownLib.parse(text, { gfm: true, breaks: true, mangle: false, headerIds: false });
    return purifier.sanitize(html, SANITIZE);
  } catch (e) {
    console.warn('markdown rendering failed, showing plain text:', e);
    return null;
  }
}

function renderMessage(msg) {
  const box = document.createElement('div');
  box.className = `msg ${msg.role}`;
  const role = document.createElement('div');
  role.className = 'role';
  role.textContent = msg.role;
  box.append(role);
  if (msg.reasoning_content) {
    const details = document.createElement('details');
    details.className = 'reasoning';
    details.open = Boolean(msg.streaming);
    const summary = document.createElement('summary');
    summary.textContent = msg.streaming && !msg.content ? 'Reasoning…' : 'Reasoning';
    const text = document.createElement('div');
    text.className = 'reasoning-text';
    text.textContent = msg.reasoning_content;
    details.append(summary, text);
    box.append(details);
  }
  const body = document.createElement('div');
  body.className = 'body';
  const rendered = msg.role === 'assistant' ? markdown(msg.content || '') : null;
  if (rendered !== null) body.append(rendered);
  else body.textContent = msg.content;
  box.append(body);
  for (const call of msg.tool_calls || []) {
    const tc = document.createElement('div');
    tc.className = 'tool-call';
    const name = document.createElement('div');
    name.className = 'tool-name';
    name.textContent = `tool call: ${call.function?.name ?? '?'}`;
    const args = document.createElement('pre');
    let shown = call.function?.arguments ?? '';
    try { shown = JSON.stringify(JSON.parse(shown), null, 2); } catch { /* still streaming, or not JSON */ }
    args.textContent = shown;
    tc.append(name, args);
    box.append(tc);
  }
  if (msg.note) {
    const note = document.createElement('div');
    note.className = `note${msg.failed ? ' failed' : ''}`;
    note.textContent = msg.note;
    box.append(note);
  }
  return box;
}

function renderMessages() {
  const list = ui.messages;
  const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  list.replaceChildren(...(currentConv()?.messages ?? []).map(renderMessage));
  if (atBottom) list.scrollTop = list.scrollHeight;
}

function renderAll() {
  renderConvList();
  renderMessages();
  const running = Boolean(state.running);
  ui.send.hidden = running;
  ui.stop.hidden = !running;
}

let renderQueued = false;
function renderSoon() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    renderMessages();
  });
}

// ---- sending -------------------------------------------------------------------------

function parseTools() {
  const text = state.settings.tools.trim();
  if (!text) return null;
  const tools = JSON.parse(text);
  if (!Array.isArray(tools)) throw new Error('Tools must be a JSON array');
  return tools;
}

// The conversation as the API wants it: the page's own fields (note, streaming, …) left out.
function apiMessages(conv, upTo) {
  const out = [];
  if (state.settings.system.trim()) out.push({ role: 'system', content: state.settings.system });
  for (const m of conv.messages.slice(0, upTo)) {
    const a = { role: m.role, content: m.content ?? '' };
    if (m.reasoning_content) a.reasoning_content = m.reasoning_content;
    if (m.tool_calls?.length) a.tool_calls = m.tool_calls;
    out.push(a);
  }
  return out;
}

function requestBody(conv, upTo) {
  const s = state.settings;
  const body = {
    messages: apiMessages(conv, upTo), stream: true, stream_options: { include_usage: true },
    temperature: Number(s.temperature), top_p: Number(s.top_p), max_tokens: Number(s.max_tokens),
  };
  if (s.reasoning_effort) body.reasoning_effort = s.reasoning_effort;
  const tools = parseTools();
  if (tools) body.tools = tools;
  return body;
}

// Folds one SSE chunk's delta into the message.
function applyDelta(msg, delta) {
  if (typeof delta.reasoning_content === 'string') msg.reasoning_content = (msg.reasoning_content || '') + delta.reasoning_content;
  if (typeof delta.content === 'string') msg.content += delta.content;
  for (const tc of delta.tool_calls || []) {
    msg.tool_calls = msg.tool_calls || [];
    const i = Number.isInteger(tc.index) ? tc.index : msg.tool_calls.length;
    const call = msg.tool_calls[i] || (msg.tool_calls[i] = { id: '', type: 'function', function: { name: '', arguments: '' } });
    if (tc.id) call.id = tc.id;
    if (tc.function?.name) call.function.name += tc.function.name;
    if (tc.function?.arguments) call.function.arguments += tc.function.arguments;
  }
}

function showSpeed(n, t0, final) {
  const s = (performance.now() - t0) / 1000;
  if (final) {
    ui.speed.textContent = `${final.predicted_n} tokens · ${final.predicted_per_second.toFixed(1)} tok/s` +
      ` · prompt ${final.prompt_per_second.toFixed(0)} tok/s`;
  } else if (s > 0) {
    ui.speed.textContent = `${n} tokens · ${(n / s).toFixed(1)} tok/s`;
  }
}

async function streamAnswer(conv, msg) {
  const controller = new AbortController();
  state.running = { controller, conv, msg };
  msg.streaming = true;
  renderAll();
  let chunks = 0;
  let t0 = performance.now();
  let lastSave = Date.now();
  try {
    const body = JSON.stringify(requestBody(conv, conv.messages.length - 1));
    const res = await api('/v1/chat/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body, signal: controller.signal,
    });
    if (!res.ok) throw new Error(await errorText(res));
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    t0 = performance.now();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf('\n\n')) >= 0) {
        const event = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        for (const line of event.split('\n')) {
          if (!line.startsWith('data: ')) continue;
          const data = line.slice(6);
          if (data === '[DONE]') continue;
          const j = JSON.parse(data);
          if (j.error) throw new Error(j.error.message || 'the server reported an error');
          const choice = j.choices?.[0];
          if (choice?.delta) {
            applyDelta(msg, choice.delta);
            ++chunks;
          }
          if (choice?.finish_reason) msg.finish_reason = choice.finish_reason;
          if (j.timings) showSpeed(chunks, t0, j.timings);
          else showSpeed(chunks, t0, null);
        }
      }
      renderSoon();
      if (Date.now() - lastSave > 1000) {
        lastSave = Date.now();
        saveConvs();
      }
    }
    if (msg.finish_reason === 'length') msg.note = 'stopped at the token limit (Max tokens)';
  } catch (e) {
    if (pageLeaving) {
      // The page is unloading and took the stream with it (Chromium ends the read with a
      // network error): the answer was interrupted, not failed.
      msg.note = 'interrupted';
    } else if (e.name === 'AbortError') {
      msg.note = 'stopped';
    } else {
      msg.note = `failed: ${e.message}`;
      msg.failed = true;
    }
  } finally {
    delete msg.streaming;
    state.running = null;
    conv.updated = Date.now();
    saveConvs();
    renderAll();
  }
}

function send() {
  if (state.running) return;
  const input = ui.input;
  const text = input.value.trim();
  if (!text) return;
  try {
    parseTools();
  } catch (e) {
    showError(`Settings → Tools: ${e.message}`);
    return;
  }
  showError('');
  const conv = currentConv() || newConv();
  if (conv.messages.length === 0) conv.title = text.length > 48 ? `${text.slice(0, 47)}…` : text;
  conv.messages.push({ role: 'user', content: text });
  const msg = { role: 'assistant', content: '' };
  conv.messages.push(msg);
  // Newest conversation first.
  state.convs = [conv, ...state.convs.filter((c) => c !== conv)];
  input.value = '';
  saveConvs();
  streamAnswer(conv, msg);
}

function stop() {
  state.running?.controller.abort();
}

// ---- settings ------------------------------------------------------------------------

function bindSettings() {
  for (const name of Object.keys(DEFAULTS)) {
    const input = ui.settingInputs[name];
    input.value = state.settings[name];
    input.addEventListener('change', () => {
      state.settings[name] = input.value;
      saved.set('settings', state.settings);
      if (name === 'tools') {
        try {
          parseTools();
          showError('');
        } catch (e) {
          showError(`Settings → Tools: ${e.message}`);
        }
      }
    });
  }
  ui.settingsToggle.addEventListener('click', () => {
    const panel = ui.settings;
    panel.hidden = !panel.hidden;
    ui.settingsToggle.setAttribute('aria-expanded', String(!panel.hidden));
  });
  ui.forgetKey.addEventListener('click', () => {
    state.apiKey = '';
    localStorage.removeItem(`${KEY_PREFIX}apiKey`);
  });
}

function init() {
  if (!markdownLib || !purifier) {
    showError('the page could not load its markdown libraries');
    return;
  }
  // Links in model output open in a new tab, with no referrer and no handle on this page.
  purifier.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A') {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer');
    }
  });
  purifier.addHook('uponSanitizeAttribute', (node, data) => {
    if (data.attrName === 'class' && !/^language-[\w.+#-]+$/.test(data.attrValue)) data.keepAttr = false;
  });
  // An answer saves at most once a second while it streams (each save rewrites every
  // conversation); a page that goes away (reload, close, another tab on a phone) saves at
  // once, so all that had arrived is kept. pagehide fires on every unload; visibilitychange
  // covers mobile browsers that discard a hidden page without one. Not beforeunload: a
  // handler there keeps the page out of the back/forward cache and adds nothing.
  window.addEventListener('pagehide', () => {
    pageLeaving = true;
    saveIfStreaming();
  });
  window.addEventListener('pageshow', () => { pageLeaving = false; });
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'hidden') saveIfStreaming();
  });
  // A conversation left mid-answer by a reload: its answer is what arrived.
  for (const c of state.convs) for (const m of c.messages) if (m.streaming) { delete m.streaming; m.note = 'interrupted'; }
  bindSettings();
  ui.send.addEventListener('click', send);
  ui.stop.addEventListener('click', stop);
  ui.newChat.addEventListener('click', () => {
    if (state.running) return;
    state.currentId = null;
    renderAll();
    ui.input.focus();
  });
  ui.input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    } else if (e.key === 'Escape') {
      stop();
    }
  });
  renderAll();
  loadProps();
  ui.input.focus();
}

document.addEventListener('DOMContentLoaded', init);
