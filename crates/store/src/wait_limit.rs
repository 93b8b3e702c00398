//! How long abperf waits for a store's server (`--db-timeout`, default 60 s): set once by the
//! command line, read by the PostgreSQL backend for every connection and statement.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The default and largest sensible wait: one minute.
pub const DEFAULT_WAIT_LIMIT: Duration = Duration::from_secs(60);

static LIMIT_MS: AtomicU64 = AtomicU64::new(60_000);

/// Set how long a connection, its login or any statement may wait for the server.
pub fn set_wait_limit(limit: Duration) {
    LIMIT_MS.store(limit.as_millis().max(1) as u64, Ordering::Relaxed);
}

/// How long a connection, its login or any statement may wait for the server.
pub fn wait_limit() -> Duration {
    Duration::from_millis(LIMIT_MS.load(Ordering::Relaxed))
}
