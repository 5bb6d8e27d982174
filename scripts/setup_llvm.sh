#!/usr/bin/env bash
# Installs LLVM/MLIR 22 (what the `ptx` feature of phobos-build links against).
# Idempotent: when every package is present it only checks, in well under a
# second. Prints the prefix to export as MLIR_SYS_220_PREFIX/TABLEGEN_220_PREFIX.
set -euo pipefail

need_sudo() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

llvm_packages=(llvm-22-dev libmlir-22-dev mlir-22-tools libpolly-22-dev libclang-22-dev
    libzstd-dev libz3-dev libxml2-dev)
missing=()
for pkg in "${llvm_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup_llvm: installing ${missing[*]}"
    # The candidate may only exist after an index refresh (bookworm-security).
    if ! apt-cache show llvm-22-dev >/dev/null 2>&1; then
        need_sudo apt-get update -qq
    fi
    if ! need_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; then
        need_sudo apt-get update -qq
        need_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
    fi
fi

prefix=/usr/lib/llvm-22
if [ ! -x "$prefix/bin/mlir-tblgen" ] && [ ! -x "$prefix/bin/llvm-config" ]; then
    echo "setup_llvm: $prefix is incomplete after install; expected bin/llvm-config there" >&2
    exit 1
fi
echo "setup_llvm: LLVM/MLIR 22 at $prefix"

# A user's own crate that depends on `phobos` (default features) is built
# outside this repository, where its .cargo/config.toml does not apply:
# tell cargo itself where LLVM 22 is, once, in $CARGO_HOME/config.toml,
# unless the user already set either variable there.
cargo_config="${CARGO_HOME:-$HOME/.cargo}/config.toml"
if ! grep -qs 'MLIR_SYS_220_PREFIX\|TABLEGEN_220_PREFIX' "$cargo_config"; then
    mkdir -p "$(dirname "$cargo_config")"
    # Tables, as this repository's own .cargo/config.toml writes them: cargo
    # cannot merge a string with a table under the same key.
    entries="MLIR_SYS_220_PREFIX = { value = \"$prefix\" }\nTABLEGEN_220_PREFIX = { value = \"$prefix\" }"
    if grep -qs '^\[env\][[:space:]]*$' "$cargo_config"; then
        sed -i "/^\[env\][[:space:]]*\$/a $entries" "$cargo_config"
    else
        printf '\n# Added by Phobos scripts/setup_llvm.sh: where mlir-sys and tblgen find LLVM/MLIR 22.\n[env]\n%b\n' "$entries" >> "$cargo_config"
    fi
    echo "setup_llvm: set MLIR_SYS_220_PREFIX and TABLEGEN_220_PREFIX in $cargo_config"
fi
