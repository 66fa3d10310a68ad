#!/usr/bin/env bash
# Installs the Debian packages k3cpp builds and tests with. Idempotent: prints nothing and
# touches nothing when everything is already installed.
#   scripts/setup.sh           build and test dependencies
#   scripts/setup.sh --train   also what training k3-tiny needs (train/, docs/training.md):
#                              Debian's PyTorch with OpenBLAS and the offline text corpora
set -euo pipefail
TRAIN=0
for arg in "$@"; do
  case "$arg" in
    --train) TRAIN=1 ;;
    *) echo "setup.sh: unknown option $arg (known: --train)" >&2; exit 2 ;;
  esac
done
PKGS=(
  build-essential cmake ninja-build ccache pkg-config
  libfmt-dev nlohmann-json3-dev libcli11-dev liburing-dev
  zlib1g-dev libbrotli-dev       # gzip/br request bodies (cpp-httplib is vendored: third_party/)
  libpng-dev libjpeg62-turbo-dev # images for the vision tower: PNG, JPEG (docs/vision.md)
  libwebp-dev libgif-dev         # ... WebP (with libwebpdemux, and libwebpmux for the tests), GIF
  libgtest-dev libgmock-dev libbenchmark-dev
  clang clang-format python3
  openmpi-bin libopenmpi-dev     # distributed runs: mpirun -np N k3 … (docs/distributed.md)
  libjs-marked node-dompurify    # the chat page's markdown renderer and HTML sanitiser
  chromium                       # its browser test (tests/webui)
  glslc libvulkan-dev            # the Vulkan GPU backend: shader compiler, headers (docs/gpu.md)
  mesa-vulkan-drivers            # lavapipe, the Vulkan device on the CPU its tests run on
)
if ((TRAIN)); then
  # libopenblas0-pthread becomes the libblas.so.3 alternative: Debian's torch otherwise links
  # the reference BLAS (a 2048^2 matmul: 4.6 GFLOP/s instead of 75-115 on two cores).
  PKGS+=(python3-torch python3-numpy python3-matplotlib libopenblas0-pthread python3.11-doc fortunes)
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js (for the openai-client end-to-end test) may come from elsewhere than Debian
# (e.g. NodeSource, which bundles npm): only ask apt for it when the commands are missing.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ((TRAIN)); then
  # Debian's Python packages import from /usr/bin/python3, which need not be the first python3
  # on PATH; check the installation the training scripts will use.
  /usr/bin/python3 - <<'PY'
import sys, time
import torch
torch.set_num_threads(2)
a = torch.randn(1024, 1024)
a @ a
t = time.time()
for _ in range(4):
    a @ a
gf = 4 * 2 * 1024 ** 3 / (time.time() - t) / 1e9
print(f"setup: torch {torch.__version__}, matmul {gf:.0f} GFLOP/s on 2 threads", file=sys.stderr)
if gf < 15:
    sys.exit("setup: torch is using a slow BLAS; check `update-alternatives --display libblas.so.3-x86_64-linux-gnu`")
PY
fi
