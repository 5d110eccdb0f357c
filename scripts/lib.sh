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

# Versions the web build is proven with (see ARCHITECTURE.md, "Building the page").
TRUNK_VERSION=0.21.14
WASM_BINDGEN_VERSION=0.2.130
BINARYEN_VERSION=132
TOOLS="$ROOT/.tools"

need_trunk() {
  if ! trunk --version 2>/dev/null | grep -q " $TRUNK_VERSION\$"; then
    echo "installing trunk $TRUNK_VERSION (several minutes, once)"
    cargo install trunk --version "$TRUNK_VERSION" --locked
  fi
}

need_wasm_bindgen() {
  if ! wasm-bindgen --version 2>/dev/null | grep -q " $WASM_BINDGEN_VERSION\$"; then
    echo "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (a few minutes, once)"
    cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
  fi
}

need_wasm_opt() {
  if [ ! -x "$TOOLS/node_modules/.bin/wasm-opt" ]; then
    echo "installing binaryen $BINARYEN_VERSION (wasm-opt) into .tools"
    npm install --silent --prefix "$TOOLS" "binaryen@$BINARYEN_VERSION"
  fi
  export PATH="$TOOLS/node_modules/.bin:$PATH"
}

need_chromium() {
  if [ ! -x /usr/bin/chromium ]; then
    echo "installing chromium"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq && $sudo apt-get install -y -qq chromium chromium-driver
  fi
}

need_curl() {
  if ! command -v curl > /dev/null; then
    echo "installing curl"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq && $sudo apt-get install -y -qq curl
  fi
}

need_playwright() {
  if [ ! -d "$TOOLS/node_modules/playwright-core" ]; then
    echo "installing playwright-core into .tools"
    npm install --silent --prefix "$TOOLS" playwright-core@1.65
  fi
  # axe-core: the accessibility checks of the browser tests.
  if [ ! -f "$TOOLS/node_modules/axe-core/axe.min.js" ]; then
    echo "installing axe-core into .tools"
    npm install --silent --prefix "$TOOLS" axe-core@4.14.1
  fi
}

# The real kubectl, for the compatibility suite of `kubeloop serve`.
need_kubectl() {
  if [ -z "${KUBECTL:-}" ]; then
    if [ ! -x /usr/bin/kubectl ]; then
      echo "installing kubectl"
      local sudo=""
      [ "$(id -u)" -eq 0 ] || sudo="sudo"
      $sudo apt-get install -y -qq kubectl || {
        echo "error: the compatibility suite needs the real kubectl; install it or set KUBECTL" >&2
        exit 1
      }
    fi
    export KUBECTL=/usr/bin/kubectl
  fi
}

# The official Python client, a second real client of `kubeloop serve`.
KUBERNETES_PY_VERSION=37.0.2
need_python_client() {
  if ! "$TOOLS/py/bin/python" -c "import kubernetes, sys; sys.exit(kubernetes.__version__ != '$KUBERNETES_PY_VERSION')" 2>/dev/null; then
    echo "installing the Python kubernetes client $KUBERNETES_PY_VERSION into .tools/py"
    python3 -m venv "$TOOLS/py"
    "$TOOLS/py/bin/pip" install -q "kubernetes==$KUBERNETES_PY_VERSION"
  fi
  # pytest runs the client's own end-to-end suite (tests/clients/python_e2e.py).
  if ! "$TOOLS/py/bin/python" -c "import pytest, pytest_timeout" 2>/dev/null; then
    echo "installing pytest and pytest-timeout into .tools/py"
    "$TOOLS/py/bin/pip" install -q "pytest==9.2.0" "pytest-timeout==2.4.0"
  fi
}

# Everything the page needs to build.
need_web_tools() {
  need_cargo
  need_wasm_target
  need_wasm_bindgen
  need_wasm_opt
  need_trunk
}
