// k3 serve's chat page: behaviour (structure is index.html, looks chat.css).
// Conversations live in this browser's localStorage; the server keeps nothing between
// requests. Each answer streams from /v1/chat/completions (server-sent events) and is
// rendered as it arrives: reasoning as plain text in a collapsible block, the answer as
// markdown through marked and then DOMPurify, tool calls as text. Model output never
// reaches the page except through DOMPurify or textContent, and the page's
// Content-Security-Policy refuses inline script besides.
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

const el = (id) => document.getElementById(id);

function showError(text) {
  const box = el('error');
  box.textContent = text;
  box.hidden = !text;
}

function authHeaders() {
  return state.apiKey ? { Authorization: `Bearer ${state.apiKey}` } : {};
}

// Resolves once the user has entered a key (the server answered 401).
function askKey(refused) {
  return new Promise((resolve) => {
    const dialog = el('key-dialog');
    el('key-error').hidden = !refused;
    el('key-input').value = '';
    const ok = () => {
      const key = el('key-input').value.trim();
      if (!key) return;
      state.apiKey = key;
      saved.set('apiKey', key);
      dialog.close();
      el('key-ok').removeEventListener('click', ok);
      resolve();
    };
    el('key-ok').addEventListener('click', ok);
    el('key-input').onkeydown = (e) => { if (e.key === 'Enter') ok(); };
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
    el('prop-model').textContent = p.model_alias || '?';
    el('prop-ctx').textContent = `${p.default_generation_settings?.n_ctx ?? '?'} tokens`;
    el('prop-slots').textContent = String(p.total_slots ?? '?');
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
  const list = el('conv-list');
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
  el('conv-title').textContent = currentConv()?.title ?? 'k3 chat';
}

// ---- rendering -----------------------------------------------------------------------

// Markdown → HTML → DOMPurify. Forms, styles and images are dropped on top of DOMPurify's
// defaults (an image in model output would be a request to wherever the model says).
// null when the libraries fail: the caller then shows plain text, never unsanitised HTML.
function markdown(text) {
  try {
    const html = window.marked.parse(text, { gfm: true, breaks: true, mangle: false, headerIds: false });
    return window.DOMPurify.sanitize(html, {
      FORBID_TAGS: ['style', 'img', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'svg', 'math'],
      FORBID_ATTR: ['style'],
    });
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
  const html = msg.role === 'assistant' ? markdown(msg.content || '') : null;
  if (html !== null) body.innerHTML = html;
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
  const list = el('messages');
  const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  list.replaceChildren(...(currentConv()?.messages ?? []).map(renderMessage));
  if (atBottom) list.scrollTop = list.scrollHeight;
}

function renderAll() {
  renderConvList();
  renderMessages();
  const running = Boolean(state.running);
  el('send').hidden = running;
  el('stop').hidden = !running;
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
    el('speed').textContent = `${final.predicted_n} tokens · ${final.predicted_per_second.toFixed(1)} tok/s` +
      ` · prompt ${final.prompt_per_second.toFixed(0)} tok/s`;
  } else if (s > 0) {
    el('speed').textContent = `${n} tokens · ${(n / s).toFixed(1)} tok/s`;
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
    if (e.name === 'AbortError') {
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
  const input = el('input');
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
    const input = el(`set-${name}`);
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
  el('settings-toggle').addEventListener('click', () => {
    const panel = el('settings');
    panel.hidden = !panel.hidden;
    el('settings-toggle').setAttribute('aria-expanded', String(!panel.hidden));
  });
  el('forget-key').addEventListener('click', () => {
    state.apiKey = '';
    localStorage.removeItem(`${KEY_PREFIX}apiKey`);
  });
}

function init() {
  if (!window.marked || !window.DOMPurify) {
    showError('the page could not load its markdown libraries');
    return;
  }
  // Links in model output open in a new tab, with no referrer and no handle on this page.
  window.DOMPurify.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A') {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer');
    }
  });
  // A conversation left mid-answer by a reload: its answer is what arrived.
  for (const c of state.convs) for (const m of c.messages) if (m.streaming) { delete m.streaming; m.note = 'interrupted'; }
  bindSettings();
  el('send').addEventListener('click', send);
  el('stop').addEventListener('click', stop);
  el('new-chat').addEventListener('click', () => {
    if (state.running) return;
    state.currentId = null;
    renderAll();
    el('input').focus();
  });
  el('input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    } else if (e.key === 'Escape') {
      stop();
    }
  });
  renderAll();
  loadProps();
  el('input').focus();
}

document.addEventListener('DOMContentLoaded', init);
