#!/usr/bin/env bash
# The package as a user gets it: `npm pack`, then `npm install -g` of the tarball into a temporary
# prefix, far from the checkout, and the installed `railyard` run from PATH: --version, a sandbox
# server, a client command against it, and the shell completion script. Needs `npm run build` first.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=$(mktemp -d "${TMPDIR:-/tmp}/railyard-pack-XXXXXX")
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "pack check: $*" >&2; [ -f "$WORK/serve.log" ] && cat "$WORK/serve.log" >&2; exit 1; }

[ -f build/commands/serve.js ] || fail "build/ is missing: run npm run build first"
# --ignore-scripts: prepack would build again; CI has just built.
TARBALL=$(npm pack --ignore-scripts --silent --pack-destination "$WORK" | tail -n 1)
NAME=$(node -p "require('./package.json').name")
VERSION=$(node -p "require('./package.json').version")
echo "pack check: $TARBALL"
# better-sqlite3 compiles SQLite from source when no prebuilt binary can be downloaded (minutes on two
# cores): by default the check installs without install scripts and gives the installed
# better-sqlite3 the binary the checkout built (same version, same Node). RAILYARD_PACK_CHECK_BUILD=1
# installs exactly as a user does, compiling included.
# The install's warnings are kept (--loglevel=warn) and any EBADENGINE fails the check: a package
# that wants a newer Node than package.json's engines is what a user sees on Node 20, and the
# lockfile's `overrides` do not reach a global install, so the dependencies themselves must fit.
INSTALL_ARGS=(-g --prefix "$WORK/prefix" --no-audit --no-fund --loglevel=warn)
[ "${RAILYARD_PACK_CHECK_BUILD:-}" = 1 ] || INSTALL_ARGS+=(--ignore-scripts)
npm install "${INSTALL_ARGS[@]}" "$WORK/$TARBALL" >"$WORK/install.log" 2>&1 || { cat "$WORK/install.log" >&2; fail "npm install -g of the tarball failed"; }
if grep -q EBADENGINE "$WORK/install.log"; then
  grep -A4 EBADENGINE "$WORK/install.log" >&2
  fail "npm install -g warned EBADENGINE: a dependency does not support this Node ($(node --version))"
fi
npm ls -g --prefix "$WORK/prefix" --all >"$WORK/ls.log" 2>&1 || { cat "$WORK/ls.log" >&2; fail "npm ls of the global install failed"; }
if [ "${RAILYARD_PACK_CHECK_BUILD:-}" != 1 ]; then
  SQLITE="$WORK/prefix/lib/node_modules/$NAME/node_modules/better-sqlite3"
  [ "$(node -p "require('$SQLITE/package.json').version")" = "$(node -p "require('./node_modules/better-sqlite3/package.json').version")" ] ||
    fail "the package's better-sqlite3 differs from the checkout's: run with RAILYARD_PACK_CHECK_BUILD=1"
  mkdir -p "$SQLITE/build/Release"
  cp node_modules/better-sqlite3/build/Release/better_sqlite3.node "$SQLITE/build/Release/"
fi

# Only the installed package: a PATH without the checkout's node_modules/.bin, a HOME of its own, cwd elsewhere.
export PATH="$WORK/prefix/bin:$PATH" HOME="$WORK/home" XDG_CONFIG_HOME="$WORK/home/.config" XDG_CACHE_HOME="$WORK/home/.cache" XDG_DATA_HOME="$WORK/home/.local/share"
mkdir -p "$HOME" && cd "$HOME"
[ "$(command -v railyard)" = "$WORK/prefix/bin/railyard" ] || fail "railyard is not the installed one: $(command -v railyard)"
railyard --version | grep -q "^$NAME/$VERSION " || fail "railyard --version printed: $(railyard --version)"
# The start-up fast path (src/cli/fast-path.ts) is in the package: the help cache answers, byte-identical to oclif.
# Uncoloured output, whatever the CI sets (CI=true makes ansis colour, and the fast path then rightly stands aside).
unset FORCE_COLOR
export NO_COLOR=1
PKG="$WORK/prefix/lib/node_modules/$NAME"
[ -f "$PKG/build/help-cache.json" ] || fail "build/help-cache.json is not in the package"
FAST=$(node --input-type=module -e "const m = await import('$PKG/build/cli/fast-path.js'); process.stdout.write(m.fastOutput(['mq','status','--help']) ?? 'none')")
LIVE=$(node --input-type=module -e "const { execute } = await import('$PKG/node_modules/@oclif/core/lib/index.js'); await execute({ dir: 'file://$PKG/bin/run.js', args: ['mq','status','--help'] })")
[ "$FAST" = "$LIVE" ] || fail "the installed help cache differs from oclif's help (or was not used): $FAST"
[ "$(railyard mq status --help)" = "$LIVE" ] || fail "railyard mq status --help differs from oclif's help"

TOKEN=ry_pack_check_token_0123456789abcdef0123456789
# The log exists before the loop reads it: the background job opens it only once it is scheduled
# (a loaded machine left the first read without a file, and `set -e` ended the check there).
: >"$WORK/serve.log"
RAILYARD_SERVER_TOKEN=$TOKEN railyard serve --sandbox --port 0 --data-dir "$WORK/data" --sandbox-test-seconds 1 --log-level warn >>"$WORK/serve.log" 2>&1 &
SERVER_PID=$!
URL=""
for _ in $(seq 1 300); do
  URL=$(sed -n 's/^Railyard API listening on \(http[^ ]*\)$/\1/p' "$WORK/serve.log")
  [ -n "$URL" ] && break
  kill -0 "$SERVER_PID" 2>/dev/null || fail "railyard serve --sandbox exited"
  sleep 0.1
done
[ -n "$URL" ] || fail "railyard serve --sandbox did not say where it listens"
export RAILYARD_API_URL=$URL RAILYARD_TOKEN=$TOKEN
railyard mq queue create --repo acme/web --branch main >/dev/null || fail "mq queue create failed"
railyard mq submit 1 --repo acme/web --branch main >/dev/null || fail "mq submit failed"
railyard mq status 1 --repo acme/web --branch main --json | grep -q '"prNumber": 1' || fail "mq status did not show #1"
railyard autocomplete script bash | grep -q railyard || fail "railyard autocomplete script bash printed no script"
echo "pack check: $NAME@$VERSION installs from its tarball; railyard --version, serve --sandbox, mq and autocomplete run from PATH"
