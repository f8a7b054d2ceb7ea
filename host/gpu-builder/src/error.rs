//! One error type for the build pipeline; every message says what failed and where.

use std::fmt;
use std::path::Path;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug)]
pub struct Error {
    message: String,
}

impl Error {
    pub fn msg(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    pub fn io(path: &Path, err: std::io::Error) -> Self {
        Self::msg(format!("{}: {err}", path.display()))
    }

    /// Prefixes the message with what was being done.
    pub fn context(self, what: impl fmt::Display) -> Self {
        Self::msg(format!("{what}: {}", self.message))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
