//! Integration tests: zeek_http.
