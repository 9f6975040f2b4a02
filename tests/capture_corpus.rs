//! Integration tests: capture_corpus.
