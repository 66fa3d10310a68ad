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
// With a vision tower (/props modalities.vision) the composer takes images: the Image button (a
// file picker), a paste, or a drop anywhere on the page. Each is checked against the server's
// limits (/v1/models meta.vision.image_limits) before anything is sent, and goes to the server
// as a data: URL in an image_url part before the message's text. A message keeps a small
// thumbnail (a JPEG data: URL, in localStorage with the conversation) and the id of its full
// image, which lives in IndexedDB (localStorage holds about 5 MB per origin: one photo would fill
// it), so a reloaded conversation shows its pictures and sends them again.
'use strict';

const KEY_PREFIX = 'k3chat.';
const DEFAULTS = { temperature: 0.7, top_p: 0.95, max_tokens: 1024, reasoning_effort: '', system: '', tools: '' };
// k3 serve's image limits (docs/vision.md), for a server that lists none.
const DEFAULT_IMAGE_LIMITS = Object.freeze({ max_bytes: 20 << 20, max_side: 16384, max_pixels: 50000000, max_images: 16 });
const NO_VISION = 'this server has no vision tower, so it takes no images (start k3 serve with --mmproj FILE)';
const THUMB_SIDE = 192;  // pixels, the longer side of a stored thumbnail

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
  vision: null,  // the server's image limits when it sees images (loadProps), else null
  pending: [],  // images attached to the next message: {id, name, url, thumb, bytes, width, height}
  imageData: new Map(),  // image id → its data: URL, for the images this page has read or sent
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
  composer: byId('composer'),
  attach: byId('attach'),
  attachInput: byId('attach-input'),
  attachments: byId('attachments'),
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

// The message of an error answer; `status` says which answer it was.
class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
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
    state.vision = p.modalities?.vision === true ? await imageLimits() : null;
    ui.attach.hidden = !state.vision;
  } catch (e) {
    showError(`cannot read the server's properties: ${e.message}`);
  }
}

// The server's image limits (/v1/models, meta.vision.image_limits), each a positive number,
// else k3 serve's defaults.
async function imageLimits() {
  const limits = { ...DEFAULT_IMAGE_LIMITS };
  try {
    const res = await api('/v1/models');
    const listed = res.ok ? (await res.json()).data?.[0]?.meta?.vision?.image_limits : null;
    for (const name of Object.keys(limits)) {
      const v = listed?.[name];
      if (Number.isFinite(v) && v > 0) limits[name] = v;
    }
  } catch (e) {
    console.warn('chat page: no image limits from /v1/models, using the defaults:', e);
  }
  return Object.freeze(limits);
}

// ---- images --------------------------------------------------------------------------

// The full images, by id, in IndexedDB (database k3chat, store images: id → data: URL).
const imageStore = {
  db: null,
  open() {
    this.db ??= new Promise((resolve, reject) => {
      const req = indexedDB.open('k3chat', 1);
      req.onupgradeneeded = () => req.result.createObjectStore('images');
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
    return this.db;
  },
  async run(mode, fn) {
    const db = await this.open();
    return new Promise((resolve, reject) => {
      const tx = db.transaction('images', mode);
      const req = fn(tx.objectStore('images'));
      tx.oncomplete = () => resolve(req?.result);
      tx.onerror = tx.onabort = () => reject(tx.error || new Error('IndexedDB transaction aborted'));
    });
  },
  put(id, url) { return this.run('readwrite', (s) => s.put(url, id)); },
  get(id) { return this.run('readonly', (s) => s.get(id)); },
  keys() { return this.run('readonly', (s) => s.getAllKeys()); },
  remove(ids) { return this.run('readwrite', (s) => { for (const id of ids) s.delete(id); }); },
};

const imageIds = (conv) => (conv?.messages ?? []).flatMap((m) => (m?.images ?? []).map((i) => i.id));

// Images that no stored conversation names (deleted in another tab, or a save that failed),
// removed once at start-up. The conversations are read again from localStorage, so those
// another tab saved since this page loaded are kept.
async function forgetStrayImages() {
  try {
    const fresh = saved.get('conversations', []);
    const keep = new Set([...state.convs, ...(Array.isArray(fresh) ? fresh : [])].flatMap(imageIds));
    const stray = (await imageStore.keys()).filter((k) => !keep.has(k));
    if (stray.length) await imageStore.remove(stray);
  } catch (e) {
    console.warn('chat page: image storage unavailable:', e);
  }
}

// The data: URL of a message's image: this page's copy, else IndexedDB's.
async function imageUrl(image) {
  let url = state.imageData.get(image.id);
  if (url === undefined) {
    try {
      url = await imageStore.get(image.id);
    } catch (e) {
      console.warn('chat page: image storage unavailable:', e);
    }
    if (typeof url !== 'string') {
      throw new Error(`the image ${image.name} is no longer stored in this browser: start a new chat to send it again`);
    }
    state.imageData.set(image.id, url);
  }
  return url;
}

// Keeps sent images in IndexedDB. One that cannot be kept (storage full or off) is still sent
// while this page is open.
function storeImages(images) {
  for (const image of images) {
    state.imageData.set(image.id, image.url);
    imageStore.put(image.id, image.url).catch((e) =>
      showError(`${image.name}: this browser could not keep the image (${e.message}); ` +
                'it is sent while this page stays open, not after a reload'));
  }
}

// The format by the file's first bytes (as the server judges it), never by its name or type.
function sniffImage(b) {
  const ascii = (at, s) => [...s].every((c, k) => b[at + k] === c.charCodeAt(0));
  if (b[0] === 0x89 && ascii(1, 'PNG')) return 'image/png';
  if (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (ascii(0, 'GIF8')) return 'image/gif';
  if (ascii(0, 'RIFF') && ascii(8, 'WEBP')) return 'image/webp';
  return null;
}

const mib = (n) => `${(n / 1048576).toFixed(n < 10485760 ? 1 : 0)} MiB`;

function readDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error || new Error('the file could not be read'));
    reader.readAsDataURL(file);
  });
}

function loadImage(url) {
  return new Promise((resolve, reject) => {
    const img = new Image();
    img.onload = () => resolve(img);
    img.onerror = () => reject(new Error('this browser cannot read it as an image'));
    img.src = url;
  });
}

function thumbnail(img) {
  const scale = Math.min(1, THUMB_SIDE / Math.max(img.naturalWidth, img.naturalHeight));
  const canvas = document.createElement('canvas');
  canvas.width = Math.max(1, Math.round(img.naturalWidth * scale));
  canvas.height = Math.max(1, Math.round(img.naturalHeight * scale));
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#fff';  // under transparent pixels: JPEG has no alpha
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
  return canvas.toDataURL('image/jpeg', 0.85);
}

// A file → an attachment, or an Error saying why the server would not take it. The size is
// checked before the file is read, the format by its first bytes, the pixels once the browser
// has its header; the data: URL names the format the bytes are.
async function readImage(file) {
  const lim = state.vision;
  if (file.size > lim.max_bytes) throw new Error(`${mib(file.size)}, over this server's ${mib(lim.max_bytes)} per image`);
  const type = sniffImage(new Uint8Array(await file.slice(0, 12).arrayBuffer()));
  if (!type) throw new Error('not a PNG, JPEG, WebP or GIF image');
  const read = await readDataUrl(file);
  const url = `data:${type};base64,${read.slice(read.indexOf(',') + 1)}`;
  const img = await loadImage(url);
  const w = img.naturalWidth, h = img.naturalHeight;
  if (Math.max(w, h) > lim.max_side) throw new Error(`${w}×${h}, over this server's ${lim.max_side} pixels a side`);
  if (w * h > lim.max_pixels) throw new Error(`${w}×${h}, over this server's ${(lim.max_pixels / 1e6).toFixed(0)} Mpixels`);
  return { id: newId('i'), name: file.name || 'pasted image', url, thumb: thumbnail(img), bytes: file.size, width: w, height: h };
}

// The images a request carries: those of the conversation's turns that are sent, and the pending.
function imagesInRequest(conv) {
  const msgs = conv?.messages ?? [];
  return msgs.reduce((n, m, i) => n + (isRefused(msgs, i) ? 0 : m.images?.length ?? 0), 0) + state.pending.length;
}

async function addImages(files) {
  if (!files.length) return;
  if (!state.vision) {
    showError(NO_VISION);
    return;
  }
  showError('');
  const most = state.vision.max_images;
  const full = () => imagesInRequest(currentConv()) >= most;
  for (const file of files) {
    const name = file.name || 'pasted image';
    try {
      if (full()) throw new Error(`a request carries at most ${most} images, those earlier in the conversation included: start a new chat for more`);
      const image = await readImage(file);
      if (full()) throw new Error(`a request carries at most ${most} images`);
      state.pending.push(image);
      renderPending();
    } catch (e) {
      showError(`${name}: ${e.message}`);
    }
  }
}

// Only thumbnails this page made are shown: a data: URL of an image type, nothing else.
const THUMB_URL = /^data:image\/(?:png|jpeg|webp|gif);base64,[A-Za-z0-9+/=]+$/;

function thumbImage(image) {
  const img = document.createElement('img');
  img.className = 'thumb';
  img.alt = image.name;
  img.title = `${image.name} · ${image.width}×${image.height} · ${mib(image.bytes)}`;
  if (THUMB_URL.test(image.thumb)) img.src = image.thumb;
  return img;
}

function renderPending() {
  ui.attachments.replaceChildren(...state.pending.map((image) => {
    const box = document.createElement('figure');
    box.className = 'attachment';
    const remove = document.createElement('button');
    remove.type = 'button';
    remove.className = 'attachment-remove';
    remove.textContent = '×';
    remove.title = `Remove ${image.name}`;
    remove.addEventListener('click', () => {
      state.pending = state.pending.filter((p) => p !== image);
      renderPending();
    });
    box.append(thumbImage(image), remove);
    return box;
  }));
  ui.attachments.hidden = state.pending.length === 0;
}

// Files dragged in, or pasted without text (a screenshot, a copied image): attached when the
// server sees images, else the reason it does not. A drop is always taken from the browser,
// which would otherwise open the file in place of the page.
function bindImageInput() {
  ui.attach.addEventListener('click', () => ui.attachInput.click());
  ui.attachInput.addEventListener('change', () => {
    const files = [...ui.attachInput.files];
    ui.attachInput.value = '';  // the same file may be chosen again
    addImages(files);
  });
  const hasFiles = (dt) => Boolean(dt) && [...dt.types].includes('Files');
  document.addEventListener('dragover', (e) => {
    if (!hasFiles(e.dataTransfer)) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = 'copy';
    ui.composer.classList.toggle('drop-target', Boolean(state.vision));
  });
  document.addEventListener('dragleave', (e) => {
    if (!e.relatedTarget) ui.composer.classList.remove('drop-target');
  });
  document.addEventListener('drop', (e) => {
    if (!hasFiles(e.dataTransfer)) return;
    e.preventDefault();
    ui.composer.classList.remove('drop-target');
    addImages([...e.dataTransfer.files]);
  });
  document.addEventListener('paste', (e) => {
    const data = e.clipboardData;
    const files = [...(data?.files ?? [])];
    // Text with a picture beside it (a copied document) pastes as text.
    if (!files.length || [...data.types].includes('text/plain')) return;
    e.preventDefault();
    addImages(files);
  });
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

const newId = (prefix) => `${prefix}${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

function newConv() {
  const conv = { id: newId('c'), title: 'New chat', messages: [], updated: Date.now() };
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
  const ids = imageIds(state.convs.find((c) => c.id === id));
  state.convs = state.convs.filter((c) => c.id !== id);
  if (ids.length) {
    for (const i of ids) state.imageData.delete(i);
    imageStore.remove(ids).catch((e) => console.warn('chat page: image storage unavailable:', e));
  }
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
  if (msg.images?.length) {
    const row = document.createElement('div');
    row.className = 'images';
    row.append(...msg.images.map(thumbImage));
    box.append(row);
  }
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
  if (msg.content || !msg.images?.length) box.append(body);  // an image alone has no text bubble
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

// A turn the server refused (400, 413: its request was malformed, too large, an image it
// could not read) is not sent again, or every later request would be refused the same way.
const isRefused = (msgs, i) => Boolean(msgs[i]?.refused || (msgs[i]?.role === 'user' && msgs[i + 1]?.refused));

// The conversation as the API wants it: the page's own fields (note, streaming, …) left out,
// a message's images as image_url parts before its text.
async function apiMessages(conv, upTo) {
  const out = [];
  if (state.settings.system.trim()) out.push({ role: 'system', content: state.settings.system });
  const msgs = conv.messages.slice(0, upTo);
  for (const [i, m] of msgs.entries()) {
    if (isRefused(conv.messages, i)) continue;
    const a = { role: m.role, content: m.content ?? '' };
    if (m.images?.length) {
      const parts = await Promise.all(m.images.map(async (image) => ({ type: 'image_url', image_url: { url: await imageUrl(image) } })));
      a.content = m.content ? [...parts, { type: 'text', text: m.content }] : parts;
    }
    if (m.reasoning_content) a.reasoning_content = m.reasoning_content;
    if (m.tool_calls?.length) a.tool_calls = m.tool_calls;
    out.push(a);
  }
  return out;
}

async function requestBody(conv, upTo) {
  const s = state.settings;
  const body = {
    messages: await apiMessages(conv, upTo), stream: true, stream_options: { include_usage: true },
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
    const body = JSON.stringify(await requestBody(conv, conv.messages.length - 1));
    const res = await api('/v1/chat/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body, signal: controller.signal,
    });
    if (!res.ok) throw new HttpError(res.status, await errorText(res));
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
    } else if (e.status === 400 || e.status === 413) {
      msg.note = `refused: ${e.message} (this turn is not sent again)`;
      msg.failed = true;
      msg.refused = true;
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
  const images = state.pending;
  if (!text && !images.length) return;
  try {
    parseTools();
  } catch (e) {
    showError(`Settings → Tools: ${e.message}`);
    return;
  }
  showError('');
  const conv = currentConv() || newConv();
  const title = text || images[0].name;
  if (conv.messages.length === 0) conv.title = title.length > 48 ? `${title.slice(0, 47)}…` : title;
  const user = { role: 'user', content: text };
  if (images.length) {
    user.images = images.map(({ url, ...kept }) => kept);  // the full image goes to IndexedDB
    storeImages(images);
    state.pending = [];
    renderPending();
  }
  conv.messages.push(user);
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
  bindImageInput();
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
  forgetStrayImages();
  ui.input.focus();
}

document.addEventListener('DOMContentLoaded', init);
