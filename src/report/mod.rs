//! Report stage: [`crate::mcp::Exchange`]s -> exchanges table, sessions table,
//! run summary and terminal summary.
