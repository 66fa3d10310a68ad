#!/usr/bin/env bash
# tests/webui/run.sh [K3_BINARY]: the chat page in a real browser. Starts `k3 serve` (scripted
# output, ephemeral port, an API key) on the golden small model, and a second one with a vision
# tower (the embedded k3-tiny with --mmproj: k3_vision_tower in scripts/lib/serve.sh says which),
# and runs chat_page.test.mjs: Playwright (playwright-core, pinned in package-lock.json) driving
# Debian's chromium.
# K3_SCREENSHOTS=DIR also writes the page's screenshots there (docs/webui-*.png come from it).
# Installs playwright-core into tests/webui/node_modules on first use. Exits with the tests'
# status.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
. "$root/scripts/lib/serve.sh"
k3="${1:-${K3_BINARY:-$root/build/bin/k3}}"
[ -x "$k3" ] || { echo "webui/run.sh: no k3 binary at $k3 (pass it as the first argument)" >&2; exit 2; }
command -v node >/dev/null || { echo "webui/run.sh: node is required" >&2; exit 2; }
export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
[ -x "$CHROMIUM" ] || { echo "webui/run.sh: no browser at $CHROMIUM (Debian package chromium; scripts/setup.sh installs it)" >&2; exit 2; }
if [ ! -d "$here/node_modules/playwright-core" ]; then
  (cd "$here" && npm ci --no-audit --no-fund --silent)
fi
tmp="$(mktemp -d)"
cleanup() {
  for p in ${pid:-} ${vision_pid:-}; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
# The answers, one per request in this order (chat_page.test.mjs sends them in turn; job i
# gets answer i mod n).
node --input-type=module -e '
const close = "<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>";
const foreign = "http://x.invalid";
const long = Array.from({length: 1500}, (_, i) => `word${i % 10}`).join(" ");
const scripts = [
  "Let me think about greeting.<|close|>think<|sep|><|open|>response<|sep|>Hello **world**! Some code:\n\n```\nprint(42)\n```\n" + close,
  "Thinking long.<|close|>think<|sep|><|open|>response<|sep|>" + long + close,
  "Need the weather.<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|open|>argument key=\"city\" type=\"string\"<|sep|>Paris<|close|>argument<|sep|><|open|>argument key=\"days\" type=\"number\"<|sep|>2<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>",
  "Plan: <img src=x onerror=\"window.__xss=7\"><|close|>think<|sep|><|open|>response<|sep|>" +
    "A <img src=x onerror=\"window.__xss=1\"> B <script>window.__xss=2</script> " +
    "[link](javascript:window.__xss=3) <a href=\"javascript:window.__xss=4\">a</a> " +
    "<svg onload=\"window.__xss=5\"></svg> <iframe srcdoc=\"<script>parent.__xss=6</script>\"></iframe> " +
    "<details open ontoggle=\"window.__xss=8\">x</details> end of payload" + close,
  // 4: DOM clobbering: elements named like the page controls.
  "Planning.<|close|>think<|sep|><|open|>response<|sep|>Here: <data id=\"input\" value=\"evil text from the answer\">d</data> " +
    "<a id=\"send\" href=\"#x\">s</a> <span id=\"stop\">x</span> <form id=\"send\"><input name=\"input\" value=\"evil\"></form> " +
    "<data id=\"key-input\" value=\"evil-key\">k</data> <img name=\"key-input\" src=\"data:,\"> <a name=\"input\">n</a> " +
    "<output id=\"key-ok\">o</output> <b name=\"new-chat\" id=\"settings-toggle\">t</b> end of clobber" + close,
  // 5, 6: the answers to what the user typed after 4.
  "Fine.<|close|>think<|sep|><|open|>response<|sep|>Noted." + close,
  "Fine.<|close|>think<|sep|><|open|>response<|sep|>Key accepted." + close,
  // 7: every element and attribute that could load media from another host.
  "Media.<|close|>think<|sep|><|open|>response<|sep|>" + [
    `<video poster="${foreign}/poster.png" src="${foreign}/video.mp4" autoplay muted></video>`,
    `<video controls preload="auto"><source src="${foreign}/source.mp4" type="video/mp4"><track src="${foreign}/track.vtt" kind="subtitles" default></video>`,
    `<audio src="${foreign}/audio.mp3" autoplay preload="auto"></audio> <audio controls preload="auto"><source src="${foreign}/source.ogg"></audio>`,
    `<picture><source srcset="${foreign}/picture.webp"><img src="${foreign}/picture.png"></picture> <img srcset="${foreign}/srcset.png 1x">`,
    `<embed src="${foreign}/embed.swf"> <object data="${foreign}/object.pdf"></object> <iframe src="${foreign}/iframe.html"></iframe>`,
    `<input type="image" src="${foreign}/input.png"> <form action="${foreign}/form"><button formaction="${foreign}/button">b</button></form>`,
    `<svg><image href="${foreign}/svg-image.png"/><use href="${foreign}/use.svg#x"/></svg>`,
    `<table background="${foreign}/table.png"><tr><td background="${foreign}/td.png">cell</td></tr></table>`,
    `<link rel="stylesheet" href="${foreign}/link.css"> <div style="background:url(${foreign}/style.png)">styled</div>`,
    `![a markdown image](${foreign}/markdown.png)`,
    "end of media",
  ].join("\n\n") + close,
  // 8: a long answer again, for the reload in the middle of it.
  "Thinking long.<|close|>think<|sep|><|open|>response<|sep|>" + long + close,
];
process.stdout.write(JSON.stringify(scripts));
' > "$tmp/scripts.json"
key="webui-test-key"
k3_vision_tower
k3_serve_start "$tmp/vision.log" "$k3" --mmproj "$mmproj" -c 4096 -t 1 --api-key "$key"
vision_pid="$pid"; vision_port="$port"
k3_serve_start "$tmp/serve.log" "$k3" -m "$root/tests/data/golden/small-q8_0.gguf" -c 4096 -t 1 --api-key "$key" \
  --scripted-output "$tmp/scripts.json"
answers="$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).length)' "$tmp/scripts.json")"
K3_BASE="http://127.0.0.1:$port" K3_KEY="$key" K3_ANSWERS="$answers" K3_VISION_BASE="http://127.0.0.1:$vision_port" \
  K3_VISION_TRAINED="$vision_trained" node --test --test-concurrency=1 "$here/chat_page.test.mjs" \
  || { echo "webui/run.sh: chat page tests failed; server logs:" >&2; cat "$tmp/serve.log" "$tmp/vision.log" >&2; exit 1; }
for p in "$pid" "$vision_pid"; do
  kill -TERM "$p"; rc=0; wait "$p" || rc=$?
  [ "$rc" -eq 0 ] || { echo "webui/run.sh: k3 serve exited $rc after SIGTERM" >&2; exit 1; }
done
pid=""; vision_pid=""
