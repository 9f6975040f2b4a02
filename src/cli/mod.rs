//! Command line: clap arguments -> validated configuration -> run the stages.
