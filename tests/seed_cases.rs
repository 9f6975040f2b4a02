//! Integration tests: seed_cases.
