#!/usr/bin/env bash
# Installs what `make test` and `make serve` need and is missing. Idempotent:
# when everything is present it only checks, in well under a second.
#
#   scripts/setup.sh           # everything `make test` needs
#   scripts/setup.sh --serve   # only what `make serve` needs: build tools,
#                              # Rust, python3 with pip (the model fetch)
set -euo pipefail

serve_only=false
case "${1:-}" in
    "") ;;
    --serve) serve_only=true ;;
    *) echo "setup: unknown option '$1' (expected --serve or nothing)" >&2; exit 2 ;;
esac

need_sudo() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

apt_packages=(build-essential pkg-config curl ca-certificates python3)
missing=()
for pkg in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    need_sudo apt-get update -qq
    need_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

# The test-data fetch (scripts/fetch_test_data.sh) needs pip and venv, which
# Debian packages apart from python3.
if ! python3 -m pip --version >/dev/null 2>&1 || ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
    echo "setup: installing python3-pip python3-venv"
    need_sudo apt-get update -qq
    need_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pip python3-venv
fi

if ! command -v cargo >/dev/null 2>&1; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
        export PATH="$HOME/.cargo/bin:$PATH"
    else
        echo "setup: installing the Rust toolchain with rustup"
        curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --component clippy,rustfmt
        export PATH="$HOME/.cargo/bin:$PATH"
    fi
fi
if $serve_only; then
    exit 0
fi
rustup component list --installed 2>/dev/null | grep -q clippy || rustup component add clippy rustfmt

# The server's end-to-end tests (phobos-serve/tests/serve_*.rs) drive it with
# the official `openai` client and a headless Debian Chromium via selenium;
# phobos-cluster's Slurm test runs a one-machine Slurm (slurm-wlm, started by
# phobos-cluster/scripts/slurm_local.sh).
browser_missing=()
for pkg in chromium chromium-driver slurm-wlm; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || browser_missing+=("$pkg")
done
if [ ${#browser_missing[@]} -gt 0 ]; then
    echo "setup: installing ${browser_missing[*]}"
    need_sudo apt-get update -qq
    need_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${browser_missing[@]}"
fi
if ! python3 -c "import importlib.util as u, sys; sys.exit(not (u.find_spec('openai') and u.find_spec('selenium')))" >/dev/null 2>&1; then
    echo "setup: installing the Python packages openai and selenium"
    python3 -m pip install -q --disable-pip-version-check openai selenium 2>/dev/null ||
        python3 -m pip install -q --disable-pip-version-check --break-system-packages openai selenium
fi

# LLVM/MLIR 22 for the `ptx` feature (on by default in the facade).
"$(dirname "$0")/setup_llvm.sh"
