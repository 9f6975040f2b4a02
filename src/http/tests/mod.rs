//! Tests of the HTTP stage: whole connections, and the HTTP fixtures.

mod connection;
mod fixture;
