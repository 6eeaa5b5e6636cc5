#!/usr/bin/env bash
# Builds the Debian package: generates the assets (man pages and completions from the
# binaries, the user unit with /usr/bin paths), then runs cargo-deb.
#
#   packaging/build-deb.sh [--profile release|dev] [--no-build]
#
# Release is what ships; `--profile dev --no-build` packages the binaries the test suite
# already built (CI checks the packaging without an hour-long release build).
set -euo pipefail
cd "$(dirname "$0")/.."

profile=release
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "build-deb.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mnemo/target}"
command -v cargo-deb >/dev/null || { echo "installing cargo-deb..."; cargo install --locked cargo-deb; }
[ "$build" = 0 ] || cargo build --profile "$profile" --bins
bins="$CARGO_TARGET_DIR/$([ "$profile" = dev ] && echo debug || echo "$profile")"

assets=packaging/deb/assets
rm -rf "$assets" && mkdir -p "$assets"
for bin in mnemod mnemo mnemo-top; do
  "$bins/$bin" --generate-man | gzip -9n > "$assets/$bin.1.gz"
done
"$bins/mnemo" completions bash > "$assets/mnemo.bash"
"$bins/mnemo" completions zsh > "$assets/_mnemo"
"$bins/mnemo" completions fish > "$assets/mnemo.fish"
sed 's#%h/.local/bin#/usr/bin#g' packaging/systemd/mnemod.service > "$assets/mnemod.service"

# Release packages ship stripped (mnemod loses ~70 MB of symbols); the dev package is only
# for checking: compress it fast and leave its binaries as built.
fast="" strip=""
[ "$profile" = release ] || { fast="--fast"; strip="--no-strip"; }
cargo deb -p mnemo-daemon --no-build --profile "$profile" $strip $fast \
  --output "$CARGO_TARGET_DIR/debian/"
