//! Captures the location and message of panics inside simulated kernel threads.
//!
//! A panic hook is process-wide, so the one installed here chains to the previous hook for
//! every panic outside a simulated kernel, and for panics inside one it records the location
//! and message (reported in `Fault::Panic`) instead of printing them.

use std::cell::{Cell, RefCell};
use std::string::String;
use std::sync::Once;

std::thread_local! {
    static CAPTURING: Cell<bool> = const { Cell::new(false) };
    static LAST: RefCell<Option<(Option<String>, String)>> = const { RefCell::new(None) };
}

/// Installs the hook once per process.
pub(crate) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(std::boxed::Box::new(move |info| {
            if CAPTURING.with(Cell::get) {
                let location = info
                    .location()
                    .map(|l| std::format!("{}:{}:{}", l.file(), l.line(), l.column()));
                let message = info
                    .payload_as_str()
                    .unwrap_or("panic with a non-string payload")
                    .into();
                LAST.with(|last| *last.borrow_mut() = Some((location, message)));
            } else {
                previous(info);
            }
        }));
    });
}

/// Marks whether this OS thread is running a kernel fiber now.
pub(crate) fn set_capturing(on: bool) {
    CAPTURING.with(|c| c.set(on));
}

/// The last captured panic on this OS thread.
pub(crate) fn take() -> Option<(Option<String>, String)> {
    LAST.with(|last| last.borrow_mut().take())
}
