#!/usr/bin/env bash
# Runs a command on this machine as if hiredis were not installed: in a
# private mount namespace (unshare --mount: root only; nothing leaks out of
# it) every hiredis header directory is covered by an empty tmpfs and every
# hiredis library file by a linker script that names a library nobody has
# (an empty file would link, as an empty script), so an #include
# <hiredis/...> fails to compile and a -lhiredis fails to link, as on a
# machine without libhiredis-dev; before the command runs, it checks that
# both really fail.
# The library, its bindings and its packages must build that way: only the
# tests know hiredis (the reference parser of tests/hiredis.cmake).
#   tests/without-hiredis.sh COMMAND [ARG...]
#   tests/without-hiredis.sh --check    exit 0 if hiding is possible here
# Exits 2, saying why, when it cannot hide hiredis (not root, no unshare).
set -euo pipefail

if [ "${1:-}" = --inside ]; then
  probe=$2
  shift 2
  # Header directories (include/hiredis, include/hiredis_ssl) and libraries
  # (libhiredis*.a, .so*), wherever the system compilers look.
  mapfile -t dirs < <(find /usr/include /usr/local/include -maxdepth 2 -type d -name 'hiredis*' 2>/dev/null)
  mapfile -t libs < <(find /usr/lib /usr/lib64 /usr/local/lib /usr/local/lib64 -maxdepth 2 \
    -name 'libhiredis*' \( -type f -o -type l \) -exec realpath {} \; 2>/dev/null | sort -u)
  echo 'INPUT(-lhiredis_hidden_by_tests_without_hiredis_sh)' >"$probe/hidden"
  for d in "${dirs[@]}"; do mount -t tmpfs -o size=1m,mode=0755 none "$d"; done
  for f in "${libs[@]}"; do mount --bind "$probe/hidden" "$f"; done
  if echo '#include <hiredis/hiredis.h>' | c++ -x c++ -E - >/dev/null 2>&1; then
    echo "without-hiredis.sh: <hiredis/hiredis.h> still compiles after hiding ${dirs[*]:-nothing}" >&2
    exit 1
  fi
  echo 'int main(void) { return 0; }' >"$probe/main.c"
  if cc "$probe/main.c" -lhiredis -o "$probe/main" >/dev/null 2>&1; then
    echo "without-hiredis.sh: -lhiredis still links after hiding ${libs[*]:-nothing}" >&2
    exit 1
  fi
  echo "without-hiredis.sh: hidden: ${dirs[*]:-} ${libs[*]:-}" >&2
  exec "$@"
fi

cannot() {
  echo "without-hiredis.sh: cannot hide hiredis here: $*" >&2
  exit 2
}
[ "$(id -u)" -eq 0 ] || cannot "not root (it mounts over the hiredis files in a private mount namespace)"
command -v unshare >/dev/null || cannot "no unshare (util-linux)"
unshare --mount --propagation private true 2>/dev/null || cannot "unshare --mount fails (a container without CAP_SYS_ADMIN?)"
if [ "${1:-}" = --check ]; then exit 0; fi
[ $# -gt 0 ] || { echo "usage: tests/without-hiredis.sh COMMAND [ARG...]" >&2; exit 2; }
# The scratch folder of the inner half: its files are mounted inside the
# namespace only, so they can go when it ends.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
rc=0
unshare --mount --propagation private "${BASH_SOURCE[0]}" --inside "$probe" "$@" || rc=$?
exit "$rc"
