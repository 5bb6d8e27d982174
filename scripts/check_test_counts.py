#!/usr/bin/env python3
"""Fails when `cargo test --workspace`'s log shows a suite that ran nothing.

    cargo test --workspace 2>&1 | tee test.log
    scripts/check_test_counts.py test.log
    scripts/check_test_counts.py --selftest

`make test` runs it on its own log. A suite can compile to zero tests
without anyone noticing (a `#![cfg(feature = ...)]` whose feature the test
build never gets, a test that returns early), so the log is the evidence:

- every integration-test binary (`Running tests/...`) runs at least one test;
- the PTX suites, named below, run and pass: the MLIR back end's tests, the
  phobos-compile PTX tests, the ptxas tests and the examples' embedded-PTX
  tests. Each entry is a test binary and a test-name pattern that must
  match at least `min` tests reported `ok` there.

Exit status 0 when all hold; 1 with one line per missing suite otherwise.
A test that returns early still reports `ok`, so this cannot see a skip
inside a test: `PHOBOS_REQUIRE_PTXAS=1` and `PHOBOS_REQUIRE_TEST_DATA=1`
turn those into failures.
"""
import re
import sys
from dataclasses import dataclass, field

# (binary, test-name regex, at least this many `ok`). A binary is the
# `Running` line's target (`tests/cli.rs`, `unittests src/lib.rs`) and the
# artifact's crate or test name (`cli`, `phobos_build`): two crates may both
# have a `tests/cli.rs`.
CLI_PTX = (
    r"^(ptx_is_the_default_output|emits_ptx_for_a_chip_index_width_and_config_to_a_file"
    r"|chip_and_a_ptx_output_write_ptx_that_ptxas_accepts)$"
)
REQUIRED = [
    (("tests/mlir_ptx.rs", "mlir_ptx"), r".", 10),
    (("tests/mlir_quant.rs", "mlir_quant"), r".", 2),
    (("tests/cli.rs", "cli"), CLI_PTX, 3),
    (("unittests src/lib.rs", "phobos_build"), r"^back::mlir::ptxas::", 6),
    (("unittests src/lib.rs", "phobos_build"), r"::measures_with_a_real_ptxas_when_there_is_one$", 1),
    (("unittests src/lib.rs", "phobos_macros"), r"^ptx::", 10),
    (("unittests src/lib.rs", "phobos_macros"), r"::with_ptxas_registers_are_recorded", 1),
    (("unittests src/lib.rs", "phobos_macros"), r"::a_second_expansion_compiles_zero_variants$", 1),
    (("tests/ptx_artifacts.rs", "ptx_artifacts"), r"^every_embedded_variant_assembles_with_ptxas$", 1),
    (("tests/ptx_artifacts.rs", "ptx_artifacts"), r"^with_phobos_ptxas_every_variant_records_registers_that_fit$", 1),
    (("tests/ptx_artifacts.rs", "ptx_artifacts"), r"^every_config_and_chip_is_a_variant_or_pruned_with_a_reason$", 1),
]

# Suites built for the host only (quantized kernels run on the host; their
# PTX is assembled by tests/mlir_quant.rs; the dtype table's PTX is checked by
# build-support's tests/dtype_table): under `ptx` they compile to zero tests,
# and `make test` runs them again with `--no-default-features`.
HOST_ONLY = {
    ("tests/dtype_table/main.rs", "dtype_table"),
    ("tests/compile_fail.rs", "compile_fail"),
    ("tests/quant_kernels.rs", "quant_kernels"),
    ("tests/quant_reference.rs", "quant_reference"),
    ("tests/host_impl_quant.rs", "host_impl_quant"),
}

RUNNING = re.compile(r"^\s*Running (.+?)(?: \((.+)\))?\s*$")
DOC_TESTS = re.compile(r"^\s*Doc-tests (\S+)\s*$")
COUNT = re.compile(r"^running (\d+) tests?\s*$")
RESULT = re.compile(r"^test (.+?) \.\.\. (ok|FAILED|ignored)(?:,.*)?\s*$")


@dataclass
class Suite:
    target: str
    artifact: str
    running: int | None = None
    ok: list = field(default_factory=list)
    not_ok: list = field(default_factory=list)


def artifact_name(path: str) -> str:
    """`.../deps/phobos_build-0a1b2c` -> `phobos_build`."""
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    stem, _, suffix = base.rpartition("-")
    return stem if stem and re.fullmatch(r"[0-9a-f]+(\.exe)?", suffix) else base


def parse(log: str) -> list:
    suites = []
    for line in log.splitlines():
        if m := RUNNING.match(line):
            suites.append(Suite(m.group(1), artifact_name(m.group(2) or m.group(1))))
        elif m := DOC_TESTS.match(line):
            suites.append(Suite("doc-tests", m.group(1)))
        elif not suites:
            continue
        elif m := COUNT.match(line):
            if suites[-1].running is None:
                suites[-1].running = int(m.group(1))
        elif m := RESULT.match(line):
            (suites[-1].ok if m.group(2) == "ok" else suites[-1].not_ok).append(m.group(1))
    return suites


def problems(suites: list) -> list:
    found = []
    if not suites:
        return ["no test binary ran (is this a `cargo test` log?)"]
    for s in suites:
        if s.target.startswith("tests/") and not s.running and (s.target, s.artifact) not in HOST_ONLY:
            found.append(f"{s.target} ({s.artifact}) ran {s.running or 0} tests")
    for (target, artifact), pattern, least in REQUIRED:
        matching = [s for s in suites if s.target == target and s.artifact == artifact]
        if not matching:
            found.append(f"{target} ({artifact}) never ran")
            continue
        ok = [t for s in matching for t in s.ok if re.search(pattern, t)]
        if len(ok) < least:
            found.append(
                f"{target} ({artifact}): {len(ok)} tests matching /{pattern}/ passed, "
                f"expected at least {least}"
            )
    return found


def selftest() -> None:
    ok = lambda names: "".join(f"test {n} ... ok\n" for n in names)
    good = f"""
     Running unittests src/lib.rs (/t/debug/deps/phobos_build-0123abcd)

running 8 tests
{ok(f"back::mlir::ptxas::tests::t{i}" for i in range(5))}\
test back::mlir::ptxas::tests::measures_with_a_real_ptxas_when_there_is_one ... ok
test front::k ... ok
test back::host::tests::print ... ignored, prints
test result: ok. 7 passed; 0 failed; 1 ignored

     Running unittests src/main.rs (/t/debug/deps/phobos-99)

running 0 tests

     Running tests/cli.rs (/t/debug/deps/cli-abc)

running 4 tests
test ptx_is_the_default_output ... ok
test emits_ptx_for_a_chip_index_width_and_config_to_a_file ... ok
test chip_and_a_ptx_output_write_ptx_that_ptxas_accepts ... ok
test ptx_rejects_configs_outside_the_tune_space ... ok

     Running tests/cli.rs (/t/debug/deps/cli-def)

running 1 tests
test serve_help ... ok

     Running tests/mlir_ptx.rs (/t/debug/deps/mlir_ptx-1f)

running 10 tests
{ok(f"t{i}" for i in range(10))}
     Running tests/mlir_quant.rs (/t/debug/deps/mlir_quant-2a)

running 2 tests
{ok(f"q{i}" for i in range(2))}
     Running unittests src/lib.rs (/t/debug/deps/phobos_macros-2e)

running 11 tests
{ok(f"ptx::tests::t{i}" for i in range(9))}\
test ptx::tests::with_ptxas_registers_are_recorded_even_for_entries_cached_without_it ... ok
test expand::tests::a_second_expansion_compiles_zero_variants ... ok

     Running tests/ptx_artifacts.rs (/t/debug/deps/ptx_artifacts-3d)

running 3 tests
test every_embedded_variant_assembles_with_ptxas has been running for over 60 seconds
test every_embedded_variant_assembles_with_ptxas ... ok
test with_phobos_ptxas_every_variant_records_registers_that_fit ... ok
test every_config_and_chip_is_a_variant_or_pruned_with_a_reason ... ok
   Doc-tests phobos_build

running 0 tests
"""
    assert problems(parse(good)) == [], problems(parse(good))
    # The defect this guards against: the PTX suite compiled to nothing.
    empty = good.replace("running 10 tests\n" + ok(f"t{i}" for i in range(10)), "running 0 tests\n")
    found = problems(parse(empty))
    assert any("tests/mlir_ptx.rs (mlir_ptx) ran 0 tests" in p for p in found), found
    # A test that is ignored or fails does not count as run.
    ignored = good.replace(
        "every_embedded_variant_assembles_with_ptxas ... ok",
        "every_embedded_variant_assembles_with_ptxas ... ignored",
    )
    assert any("every_embedded_variant" in p for p in problems(parse(ignored)))
    # Without the ptx feature, cli.rs still runs, but not its PTX tests: the
    # tests it runs instead have `ptx` in their names too.
    no_ptx = good.replace(
        "test ptx_is_the_default_output ... ok\n"
        "test emits_ptx_for_a_chip_index_width_and_config_to_a_file ... ok\n"
        "test chip_and_a_ptx_output_write_ptx_that_ptxas_accepts ... ok\n",
        "test ptx_needs_the_feature ... ok\n",
    )
    assert any("tests/cli.rs (cli): 0 tests matching" in p for p in problems(parse(no_ptx)))
    # A binary missing from the log is reported by name.
    gone = good.replace("Running tests/ptx_artifacts.rs", "Running tests/other.rs")
    assert any("tests/ptx_artifacts.rs (ptx_artifacts) never ran" in p for p in problems(parse(gone)))
    assert problems(parse("")) != []
    print("check_test_counts selftest: ok")


def main() -> int:
    if sys.argv[1:] == ["--selftest"]:
        selftest()
        return 0
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
        suites = parse(f.read())
    found = problems(suites)
    for p in found:
        print(f"check_test_counts: {p}", file=sys.stderr)
    ran = sum(s.running or 0 for s in suites)
    if found:
        print(f"check_test_counts: FAILED ({len(found)} problems, {len(suites)} binaries, "
              f"{ran} tests)", file=sys.stderr)
        return 1
    print(f"check_test_counts: {len(suites)} test binaries, {ran} tests; "
          "every integration suite and PTX suite ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
