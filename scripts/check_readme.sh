#!/usr/bin/env bash
# Check that README.md's opening commands work on a fresh clone: clone this repository's HEAD into a temp
# folder, take the commands from README.md's first fenced code block there, and run each of them, in order,
# exactly as written (one `bash -c` per line; blank lines and lines starting with `#` are skipped). Then
# stop the API the quickstart left running (scripts/quickstart.sh stop, by its PID file) and delete the
# clone. Run it before closing a change that touches setup, the quickstart or the tests.
#
#   scripts/check_readme.sh                  clone HEAD (commit first: uncommitted work is not in the clone)
#   scripts/check_readme.sh --working-tree   copy the working tree instead (tracked + untracked, not ignored)
#   scripts/check_readme.sh --readme FILE    take the commands from FILE (e.g. a README draft) instead
#   scripts/check_readme.sh --keep           keep the temp folder (its path is printed)
#   scripts/check_readme.sh --list           only print the commands it would run
#
# The environment passes through (e.g. PORT=8011 when 8000 is taken, PIP_INDEX_URL); nothing else is set.
# Exit status: 0 when every command succeeded, else the failing command's status.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
mode=clone
readme=""
keep=0
list_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --working-tree) mode=copy ;;
    --readme) readme="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; shift ;;
    --keep) keep=1 ;;
    --list) list_only=1 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check_readme: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# Commands = the lines of the first ``` fenced block (any info string: ```bash, ```sh, ```).
readme_commands() {
  awk '
    /^[[:space:]]*```/ { if (inside) exit; inside = 1; next }
    inside && $0 !~ /^[[:space:]]*(#|$)/ { print }
  ' "$1"
}

source_readme="${readme:-$REPO/README.md}"
mapfile -t commands < <(readme_commands "$source_readme")
if [ ${#commands[@]} -eq 0 ]; then
  echo "check_readme: no commands found in the first fenced code block of $source_readme" >&2
  exit 1
fi
if [ "$list_only" = 1 ]; then
  printf '%s\n' "${commands[@]}"
  exit 0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/nerservice-readme-check.XXXXXX")"
clone="$work/nerservice"
cleanup() {
  local rc=$?
  if [ -x "$clone/scripts/quickstart.sh" ]; then
    (cd "$clone" && scripts/quickstart.sh stop) || true
  fi
  if [ "$keep" = 1 ]; then
    echo "check_readme: kept $work"
  else
    rm -rf "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$mode" = clone ]; then
  sha="$(git -C "$REPO" rev-parse HEAD)"
  echo "check_readme: cloning $REPO at $sha into $clone"
  git clone --quiet --no-hardlinks "$REPO" "$clone"
  git -C "$clone" checkout --quiet --detach "$sha"
else
  echo "check_readme: copying the working tree of $REPO (tracked and untracked, not ignored) into $clone"
  mkdir -p "$clone"
  # (files deleted in the working tree but still tracked are skipped)
  (cd "$REPO" && git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do if [ -e "$f" ]; then printf '%s\0' "$f"; fi; done \
    | tar --null -T - -cf -) | tar -C "$clone" -xf -
fi
if [ -n "$readme" ]; then
  cp "$readme" "$clone/README.md"  # what the commands see is the README they came from
fi

cd "$clone"
n=0
for cmd in "${commands[@]}"; do
  n=$((n + 1))
  echo
  echo "check_readme: [$n/${#commands[@]}] \$ $cmd"
  start=$(date +%s)
  set +e
  bash -c "$cmd"
  rc=$?
  set -e
  echo "check_readme: [$n/${#commands[@]}] exit $rc after $(( $(date +%s) - start )) s"
  if [ "$rc" -ne 0 ]; then
    echo "check_readme: FAILED: '$cmd' (exit $rc) in $clone" >&2
    exit "$rc"
  fi
done
echo
echo "check_readme: OK: ${#commands[@]} README command(s) succeeded on a fresh $( [ "$mode" = clone ] && echo clone || echo copy )"
