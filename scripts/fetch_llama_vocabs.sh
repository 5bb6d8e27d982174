#!/usr/bin/env bash
# Fetches llama.cpp's tokenizer test vocabularies (ggml-vocab-*.gguf with
# .inp/.out vectors) and its real chat templates from the llama-cpp-python
# sdist on PyPI, into models/llama-vocabs/ (ignored by git).
#
#   scripts/fetch_llama_vocabs.sh            # idempotent; skips when present
#
# pip prepares the sdist's metadata even for `pip download`, which needs
# scikit-build-core and cmake: both are installed as wheels into a throwaway
# venv, so nothing is compiled.
set -euo pipefail

version=0.3.36
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/models/llama-vocabs"
if [[ -f "$dest/.complete-$version" ]]; then
    echo "llama vocabs already in $dest"
    exit 0
fi

start=$(date +%s)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check scikit-build-core cmake
"$work/venv/bin/pip" download -q --disable-pip-version-check --no-deps \
    --no-binary :all: --no-build-isolation "llama-cpp-python==$version" -d "$work"

mkdir -p "$dest"
prefix="llama_cpp_python-$version/vendor/llama.cpp"
tar -xzf "$work/llama_cpp_python-$version.tar.gz" -C "$work" \
    --wildcards "$prefix/models/ggml-vocab-*" "$prefix/models/templates/*" \
    "$prefix/tests/test-chat-template.cpp"
cp "$work/$prefix"/models/ggml-vocab-* "$dest/"
rm -rf "$dest/templates"
cp -r "$work/$prefix/models/templates" "$dest/templates"
cp "$work/$prefix/tests/test-chat-template.cpp" "$dest/"
touch "$dest/.complete-$version"
echo "fetched llama.cpp vocabs and templates into $dest in $(( $(date +%s) - start )) s"
