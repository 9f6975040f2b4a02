//! HAR 1.2/1.3 exports -> HttpEvents (rejoins the pipeline at the MCP stage).
