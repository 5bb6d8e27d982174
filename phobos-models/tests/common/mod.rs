//! Shared by the tests that read fetched, uncommitted data (real models,
//! llama.cpp's vocab files).

/// Reports missing test data: a skip with a note on a developer machine, a
/// failure where `PHOBOS_REQUIRE_TEST_DATA=1` (as `make test` sets it after
/// fetching the data), so CI can never pass by skipping.
pub fn missing_test_data(what: &str) {
    if std::env::var("PHOBOS_REQUIRE_TEST_DATA").is_ok_and(|v| v == "1") {
        panic!("{what} is missing and PHOBOS_REQUIRE_TEST_DATA=1: run scripts/fetch_test_data.sh");
    }
    eprintln!("SKIP: {what} is missing; run scripts/fetch_test_data.sh");
}
