#!/usr/bin/env bash
# Formats the C++ sources with .clang-format (Debian's clang-format, installed by setup.sh).
#   scripts/format.sh           rewrite every file that differs
#   scripts/format.sh --check   list the files that differ and exit 1 if there are any (CI)
set -euo pipefail
cd "$(dirname "$0")/.."
CF=${CLANG_FORMAT:-clang-format}
mode=${1:-}
files=$(git ls-files 'src/*.cpp' 'src/*.h' 'tests/*.cpp' 'tests/*.h' 'bench/*.cpp' 'bench/*.h' 'fuzz/*.cpp' 'fuzz/*.h' 2>/dev/null ||
        find src tests bench fuzz -name '*.cpp' -o -name '*.h' | grep -v '/data/')
if [ "$mode" = "--check" ]; then
  bad=0
  for f in $files; do
    [ -f "$f" ] || continue
    if ! "$CF" --style=file "$f" | cmp -s - "$f"; then echo "not formatted: $f (scripts/format.sh fixes it)"; bad=1; fi
  done
  exit $bad
fi
# Only files that differ are rewritten, so an unchanged file keeps its mtime (no rebuild).
for f in $files; do
  [ -f "$f" ] || continue
  "$CF" --style=file "$f" | cmp -s - "$f" || "$CF" --style=file -i "$f"
done
