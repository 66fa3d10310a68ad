#!/usr/bin/env bash
# Installs the Debian packages k3cpp builds and tests with. Idempotent: prints nothing and
# touches nothing when everything is already installed.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build ccache pkg-config
  libfmt-dev nlohmann-json3-dev libcli11-dev libcpp-httplib-dev liburing-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang python3
)
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
