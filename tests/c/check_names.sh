#!/usr/bin/env bash
# The project's names stay its own:
#  1. no identifier of the old name (see README.md, History) is left in the
#     tracked tree, apart from the one history line in README.md;
#  2. no symbol the shared library exports is also exported by GNU readline,
#     which owns the rl_ prefix (checked where libreadline.so.8 is installed;
#     tools/deps.sh installs it).
#   check_names.sh LIBRARY SOURCE_DIR
set -euo pipefail
lib=$1 src=$2
old_name=red$(printf limit)   # spelled apart so this file passes its own check
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  hits=$(git -C "$src" grep -nIi -E -e "\b$old_name" -e '\brl_[a-z]' -- ':!README.md' || true)
  readme=$(git -C "$src" grep -nIi -E -e "\b$old_name" -e '\brl_[a-z]' -- README.md | wc -l || true)
else
  hits=$(grep -rnIi -E --exclude-dir=build --exclude-dir=.git --exclude=README.md -e "\b$old_name" -e '\brl_[a-z]' "$src" || true)
  readme=$(grep -cIi -E -e "\b$old_name" -e '\brl_[a-z]' "$src/README.md" || true)
fi
if [ -n "$hits" ]; then
  echo "old names left in the tree:"; echo "$hits"; exit 1
fi
if [ "${readme:-0}" -gt 1 ]; then
  echo "README.md mentions the old names on $readme lines (one history line allowed)"; exit 1
fi
echo "no old names in the tree"

readline=$(ls /usr/lib/*/libreadline.so.8 /lib/*/libreadline.so.8 2>/dev/null | head -n1 || true)
if [ -z "$readline" ]; then
  echo "libreadline.so.8 is not installed: collision check not run"
  exit 0
fi
ours=$(nm -D --defined-only "$lib" | awk 'NF == 3 {print $3}' | sed 's/@.*//' | sort -u)
theirs=$(nm -D --defined-only "$readline" | awk 'NF == 3 {print $3}' | sed 's/@.*//' | sort -u)
[ "$(echo "$ours" | grep -c '^polylimit_')" -ge 10 ] || { echo "too few polylimit_ symbols in $lib"; exit 1; }
common=$(comm -12 <(echo "$ours") <(echo "$theirs"))
if [ -n "$common" ]; then
  echo "symbols exported by both $lib and $readline:"; echo "$common"; exit 1
fi
echo "$(echo "$ours" | wc -l) exported symbols, none shared with $readline ($(echo "$theirs" | wc -l) symbols)"
