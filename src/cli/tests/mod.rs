//! Tests of the command line.

mod defaults;
