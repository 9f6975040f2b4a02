//! Test-only helpers shared by the stages' unit tests.

use proptest::test_runner::Config;

/// A property test's configuration: `cases` cases, unless `PROPTEST_CASES` asks for another
/// number (`scripts/proptest-long.sh` runs every property test with thousands). The rest,
/// the seed (`PROPTEST_RNG_SEED`, fixed for `cargo test` in `.cargo/config.toml`) included,
/// comes from proptest's environment as usual.
pub fn proptest_cases(cases: u32) -> Config {
    let mut config = Config::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = cases;
    }
    config
}
