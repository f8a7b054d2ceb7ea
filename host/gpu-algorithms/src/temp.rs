//! Per-stream cache of temporary storage for the plain (non-`_with_temp`) methods.
//!
//! Why per stream: temporary storage is used by kernels in flight, so two streams sharing one
//! buffer could run two algorithms over it at once. One set per (stream, kind) keeps
//! stream order the only ordering needed.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Mutex;

use gpu_host::{Result, Stream};

#[derive(Default)]
pub(crate) struct TempCache {
    entries: Mutex<HashMap<(usize, TypeId), Box<dyn Any + Send>>>,
}

impl TempCache {
    /// Runs `f` with this stream's `V`, created by `make` on first use. The cache is locked
    /// meanwhile (launches from several host threads are serialized here).
    pub(crate) fn with<V: Any + Send, R>(
        &self,
        stream: &Stream,
        make: impl FnOnce() -> Result<V>,
        f: impl FnOnce(&mut V) -> Result<R>,
    ) -> Result<R> {
        let key = (stream.id(), TypeId::of::<V>());
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let entry = match entries.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(Box::new(make()?)),
        };
        let value = entry
            .downcast_mut::<V>()
            .expect("the cache key includes the value's TypeId");
        f(value)
    }
}
