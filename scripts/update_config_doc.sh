#!/usr/bin/env bash
# Rewrites docs/config.md's table of config keys with `aryl config --markdown` (the table made
# from runtime/inputs/config_keys.cpp); the test "config keys: docs/config.md's table is the
# table of keys" fails until the page holds it.
#   scripts/update_config_doc.sh [BIN]     # BIN: default build/aryl
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/aryl}
[ -x "$bin" ] || { echo "update_config_doc: $bin is not an executable (build it first)" >&2; exit 2; }
table=$(mktemp)
trap 'rm -f "$table" docs/config.md.new' EXIT
"$bin" config --markdown > "$table"
grep -q '^| key |' docs/config.md || { echo "update_config_doc: docs/config.md has no table starting '| key |'" >&2; exit 2; }
awk -v table="$table" '
  !done && /^\| key \|/ { while ((getline line < table) > 0) print line; inside = 1; done = 1; next }
  inside && /^\|/ { next }
  { inside = 0; print }
' docs/config.md > docs/config.md.new
mv docs/config.md.new docs/config.md
