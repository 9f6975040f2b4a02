//! Test support: builders for captures and fixtures.
