# Shared by the set-up scripts: find or install what kubeloop needs, idempotently.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

need_cargo() {
  if ! command -v cargo >/dev/null 2>&1; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
      export PATH="$HOME/.cargo/bin:$PATH"
    else
      echo "error: cargo (Rust 1.95) is required; install it with rustup first" >&2
      exit 1
    fi
  fi
}

need_wasm_target() {
  if ! rustup target list --installed 2>/dev/null | grep -q '^wasm32-unknown-unknown$'; then
    echo "installing the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown
  fi
}
