//! Integration tests: har_corpus.
