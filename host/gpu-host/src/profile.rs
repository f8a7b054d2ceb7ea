//! Measuring kernels: device time from CUDA events, achieved bandwidth and FLOP rate from a cost
//! the caller states, occupancy, and a one-line summary per kernel; plus NVTX ranges so Nsight
//! Systems / Nsight Compute show this program's names.
//!
//! ```ignore
//! let mut profile = Profile::new(gpu.default_stream());
//! let occupancy = kernels.raw().kernel("saxpy")?.occupancy(256, 0)?;
//! profile.measure("saxpy", Cost::bytes(12 * n as u64).flops(2 * n as u64), Some(occupancy), |s| {
//!     kernels.saxpy(s, LaunchConfig::for_elements(n, 256), 2.0, &x, &y, &mut out)
//! })?;
//! print!("{profile}"); // saxpy  0.215 ms/launch (x20)  3121.4 GB/s  0.31 TFLOP/s  occupancy 100% ...
//! ```
//!
//! Timing uses events on the stream, not the host clock: a launch returns before the kernel
//! runs, so wall-clock time around it measures the launch call, not the kernel.

use std::fmt;
use std::time::Duration;

use crate::error::Result;
use crate::launch::Occupancy;
use crate::stream::Stream;

/// What one launch of a kernel costs, as the caller counts it: bytes moved to and from device
/// memory, and arithmetic operations. Used to turn a time into GB/s and FLOP/s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cost {
    /// Bytes read plus bytes written per launch (0: not reported).
    pub bytes: u64,
    /// Floating-point operations per launch (a fused multiply-add counts 2; 0: not reported).
    pub flops: u64,
}

impl Cost {
    /// A launch that moves `bytes` bytes.
    pub fn bytes(bytes: u64) -> Cost {
        Cost { bytes, flops: 0 }
    }

    /// A launch that performs `flops` operations.
    pub fn flops(self, flops: u64) -> Cost {
        Cost { flops, ..self }
    }
}

/// The measurement of one kernel (or any stream work) under [`Profile::measure`].
#[derive(Clone, Debug, PartialEq)]
pub struct KernelStats {
    pub name: String,
    /// Mean device time of one launch.
    pub time: Duration,
    /// Launches timed (after the warm-up).
    pub launches: u32,
    pub cost: Cost,
    pub occupancy: Option<Occupancy>,
}

impl KernelStats {
    /// Achieved bandwidth in GB/s (10^9 bytes per second), when a byte count was given.
    pub fn gb_per_s(&self) -> Option<f64> {
        rate(self.cost.bytes, self.time).map(|r| r / 1e9)
    }

    /// Achieved arithmetic rate in GFLOP/s, when a flop count was given.
    pub fn gflop_per_s(&self) -> Option<f64> {
        rate(self.cost.flops, self.time).map(|r| r / 1e9)
    }
}

fn rate(amount: u64, time: Duration) -> Option<f64> {
    let secs = time.as_secs_f64();
    (amount > 0 && secs > 0.0).then(|| amount as f64 / secs)
}

impl fmt::Display for KernelStats {
    /// One line: name, time per launch, GB/s, FLOP/s, occupancy.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.time.as_secs_f64() * 1e3;
        write!(
            f,
            "{:<24} {:>10.4} ms/launch (x{})",
            self.name, ms, self.launches
        )?;
        if let Some(gbs) = self.gb_per_s() {
            write!(f, "  {gbs:>8.1} GB/s")?;
        }
        if let Some(gflops) = self.gflop_per_s() {
            if gflops >= 1000.0 {
                write!(f, "  {:>7.2} TFLOP/s", gflops / 1000.0)?;
            } else {
                write!(f, "  {gflops:>7.1} GFLOP/s")?;
            }
        }
        if let Some(o) = &self.occupancy {
            write!(
                f,
                "  occupancy {:>3.0}% ({} blocks of {} threads, {}/{} warps per SM)",
                o.fraction * 100.0,
                o.active_blocks_per_sm,
                o.block_size,
                o.active_warps_per_sm,
                o.max_warps_per_sm
            )?;
        }
        Ok(())
    }
}

/// A series of kernel measurements on one stream; `Display` prints one line per kernel.
#[derive(Debug)]
pub struct Profile {
    stream: Stream,
    warmup: u32,
    launches: u32,
    stats: Vec<KernelStats>,
}

impl Profile {
    /// Measures on `stream`, with 1 warm-up launch and 20 timed launches per kernel.
    pub fn new(stream: &Stream) -> Profile {
        Profile {
            stream: stream.clone(),
            warmup: 1,
            launches: 20,
            stats: Vec::new(),
        }
    }

    /// Launches timed per measurement (at least 1). More launches average out noise; the
    /// event resolution is about half a microsecond.
    pub fn launches(mut self, launches: u32) -> Profile {
        self.launches = launches.max(1);
        self
    }

    /// Untimed launches before timing (module load, JIT and caches settle in them).
    pub fn warmup(mut self, warmup: u32) -> Profile {
        self.warmup = warmup;
        self
    }

    /// Runs `launch` (warm-up, then the timed launches back to back between two events),
    /// inside an NVTX range named `name`, and records the mean time per launch. `launch` must
    /// submit its work to the stream it is given.
    pub fn measure(
        &mut self,
        name: &str,
        cost: Cost,
        occupancy: Option<Occupancy>,
        mut launch: impl FnMut(&Stream) -> Result<()>,
    ) -> Result<&KernelStats> {
        let _range = nvtx::range(name);
        for _ in 0..self.warmup {
            launch(&self.stream)?;
        }
        let launches = self.launches;
        let ((), ms) = self.stream.time(|s| {
            for _ in 0..launches {
                launch(s)?;
            }
            Ok(())
        })?;
        let time = Duration::from_secs_f64(f64::from(ms) * 1e-3 / f64::from(launches));
        self.stats.push(KernelStats {
            name: name.to_string(),
            time,
            launches,
            cost,
            occupancy,
        });
        Ok(self.stats.last().expect("just pushed"))
    }

    /// Everything measured so far, in order.
    pub fn stats(&self) -> &[KernelStats] {
        &self.stats
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.stats {
            writeln!(f, "{s}")?;
        }
        Ok(())
    }
}

/// NVTX ranges and marks, so Nsight tools show this program's phases by name.
///
/// CUDA 12+ ships no `libnvToolsExt.so`: NVTX v3 is header-only, and a tool that wants the
/// events (Nsight Systems, Nsight Compute) sets `NVTX_INJECTION64_PATH` to its injection
/// library. This module speaks that protocol itself: on first use it loads the library named by
/// the variable, calls its `InitializeInjectionNvtx2` with an export table through which the tool
/// fills in the functions it implements, and from then on calls those. Without the variable
/// (no tool attached) every call is a cheap no-op. Only the core ASCII calls are used
/// (`nvtxMarkA`, `nvtxRangePushA`, `nvtxRangePop`).
pub mod nvtx {
    use std::ffi::{CString, c_char, c_int, c_void};
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The environment variable through which a tool names its injection library.
    pub const INJECTION_ENV: &str = "NVTX_INJECTION64_PATH";

    /// Callback modules (`NvtxCallbackModule`) and the number of slots in each (the
    /// `NVTX_CBID_*_SIZE` values of NVTX v3, slot 0 unused).
    const MODULE_SLOTS: [usize; 7] = [
        0,  // INVALID
        16, // CORE
        9,  // CUDA
        15, // OPENCL
        7,  // CUDART
        16, // CORE2
        7,  // SYNC
    ];
    const MAX_SLOTS: usize = 16;
    /// Slot numbers in the CORE module (`NvtxCallbackIdCore`).
    const CORE_MARK_A: usize = 2;
    const CORE_RANGE_PUSH_A: usize = 9;
    const CORE_RANGE_POP: usize = 11;
    const MODULE_CORE: usize = 1;
    /// Export table ids (`NvtxExportTableID`).
    const ETID_CALLBACKS: u32 = 1;
    const ETID_VERSIONINFO: u32 = 3;
    /// The NVTX API version this implements.
    const NVTX_VERSION: u32 = 3;

    /// Function-pointer slots the tool writes into: one array per callback module. A zero slot
    /// means the tool does not implement that call.
    static SLOTS: [[AtomicUsize; MAX_SLOTS]; 7] =
        [const { [const { AtomicUsize::new(0) }; MAX_SLOTS] }; 7];

    /// The per-module tables handed to the tool: pointers to the slots, with a null at index 0
    /// and a null after the last (as NVTX's own tables have, so a tool reading past the end
    /// finds a null rather than garbage). Built once, never moved.
    struct Tables([[*mut c_void; MAX_SLOTS + 1]; 7]);
    // SAFETY: the pointers point into `SLOTS`, a static of atomics; sharing them across threads
    // is sound.
    unsafe impl Sync for Tables {}
    // SAFETY: as above.
    unsafe impl Send for Tables {}

    static TABLES: OnceLock<Tables> = OnceLock::new();

    fn tables() -> &'static Tables {
        TABLES.get_or_init(|| {
            let mut t = [[std::ptr::null_mut(); MAX_SLOTS + 1]; 7];
            for (module, &size) in MODULE_SLOTS.iter().enumerate() {
                for (slot, entry) in t[module].iter_mut().enumerate().take(size).skip(1) {
                    *entry = SLOTS[module][slot].as_ptr().cast();
                }
            }
            Tables(t)
        })
    }

    #[repr(C)]
    struct ExportTableCallbacks {
        struct_size: usize,
        get_module_function_table:
            unsafe extern "C" fn(u32, *mut *const *mut c_void, *mut u32) -> c_int,
    }

    #[repr(C)]
    struct ExportTableVersionInfo {
        struct_size: usize,
        version: u32,
        reserved0: u32,
        set_injection_nvtx_version: unsafe extern "C" fn(u32),
    }

    static CALLBACKS: ExportTableCallbacks = ExportTableCallbacks {
        struct_size: size_of::<ExportTableCallbacks>(),
        get_module_function_table,
    };

    static VERSION_INFO: ExportTableVersionInfo = ExportTableVersionInfo {
        struct_size: size_of::<ExportTableVersionInfo>(),
        version: NVTX_VERSION,
        reserved0: 0,
        set_injection_nvtx_version,
    };

    /// `NvtxExportTableCallbacks::GetModuleFunctionTable`: the tool asks for a module's slot
    /// table and its size (the module's `NVTX_CBID_*_SIZE`: entries before the trailing null).
    unsafe extern "C" fn get_module_function_table(
        module: u32,
        out_table: *mut *const *mut c_void,
        out_size: *mut u32,
    ) -> c_int {
        let module = module as usize;
        let Some(&size) = MODULE_SLOTS.get(module).filter(|&&s| s > 0) else {
            return 0;
        };
        let table = tables().0[module].as_ptr();
        if !out_size.is_null() {
            // SAFETY: the tool passes a valid pointer or null (checked).
            unsafe { *out_size = size as u32 };
        }
        if !out_table.is_null() {
            // SAFETY: as above.
            unsafe { *out_table = table };
        }
        1
    }

    unsafe extern "C" fn set_injection_nvtx_version(_version: u32) {}

    /// `nvtxGetExportTable`, handed to the tool's `InitializeInjectionNvtx2`.
    unsafe extern "C" fn get_export_table(id: u32) -> *const c_void {
        match id {
            ETID_CALLBACKS => (&raw const CALLBACKS).cast(),
            ETID_VERSIONINFO => (&raw const VERSION_INFO).cast(),
            _ => std::ptr::null(),
        }
    }

    #[cfg(unix)]
    mod dl {
        use std::ffi::{c_char, c_int, c_void};
        pub const RTLD_LAZY: c_int = 1;
        unsafe extern "C" {
            pub fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
            pub fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
        }
    }

    type InitializeInjection =
        unsafe extern "C" fn(unsafe extern "C" fn(u32) -> *const c_void) -> c_int;

    /// Whether a tool attached (decided once, on first use).
    fn attached() -> bool {
        static ATTACHED: OnceLock<bool> = OnceLock::new();
        *ATTACHED.get_or_init(|| {
            let Some(path) = std::env::var_os(INJECTION_ENV) else {
                return false;
            };
            match inject(&path) {
                Ok(()) => true,
                Err(why) => {
                    eprintln!("gpu-host: NVTX disabled: {why}");
                    false
                }
            }
        })
    }

    #[cfg(unix)]
    fn inject(path: &std::ffi::OsStr) -> Result<(), String> {
        use std::os::unix::ffi::OsStrExt;
        let c_path = CString::new(path.as_bytes())
            .map_err(|_| format!("{INJECTION_ENV} contains a NUL byte"))?;
        tables();
        // SAFETY: `c_path` is a valid NUL-terminated string. The library stays loaded for the
        // life of the process (never dlclose'd), as the tool's functions are called later.
        let handle = unsafe { dl::dlopen(c_path.as_ptr(), dl::RTLD_LAZY) };
        if handle.is_null() {
            return Err(format!("cannot load {}", path.to_string_lossy()));
        }
        // SAFETY: `handle` is a live library handle; the symbol name is NUL-terminated.
        let symbol = unsafe { dl::dlsym(handle, c"InitializeInjectionNvtx2".as_ptr()) };
        if symbol.is_null() {
            return Err(format!(
                "{} has no InitializeInjectionNvtx2",
                path.to_string_lossy()
            ));
        }
        // SAFETY: NVTX v3 defines `InitializeInjectionNvtx2` with exactly this signature
        // (`int (*)(NvtxGetExportTableFunc_t)`), and a data pointer from dlsym of a function
        // symbol is that function's address on the platforms dlsym exists on.
        let init: InitializeInjection = unsafe { std::mem::transmute(symbol) };
        // SAFETY: `get_export_table` and the tables it hands out live for the whole process; the
        // tool writes function pointers into the atomic slots during this call.
        if unsafe { init(get_export_table) } == 0 {
            return Err("the tool's InitializeInjectionNvtx2 returned failure".into());
        }
        Ok(())
    }

    #[cfg(not(unix))]
    fn inject(_path: &std::ffi::OsStr) -> Result<(), String> {
        Err("NVTX injection is only implemented on Unix".into())
    }

    fn core_slot(slot: usize) -> usize {
        if !attached() {
            return 0;
        }
        SLOTS[MODULE_CORE][slot].load(Ordering::Acquire)
    }

    fn c_string(text: &str) -> CString {
        CString::new(text.replace('\0', " ")).expect("NULs replaced")
    }

    /// Marks an instant named `message` on the tool's timeline.
    pub fn mark(message: &str) {
        let f = core_slot(CORE_MARK_A);
        if f != 0 {
            let text = c_string(message);
            // SAFETY: the tool stored its `nvtxMarkA` implementation in this slot, whose type
            // is `void (*)(const char*)`; `text` outlives the call.
            let f: unsafe extern "C" fn(*const c_char) = unsafe { std::mem::transmute(f) };
            unsafe { f(text.as_ptr()) };
        }
    }

    /// Opens a nested range named `message` on this thread (close it with [`range_pop`]).
    pub fn range_push(message: &str) {
        let f = core_slot(CORE_RANGE_PUSH_A);
        if f != 0 {
            let text = c_string(message);
            // SAFETY: the slot holds the tool's `nvtxRangePushA`, `int (*)(const char*)`.
            let f: unsafe extern "C" fn(*const c_char) -> c_int = unsafe { std::mem::transmute(f) };
            unsafe { f(text.as_ptr()) };
        }
    }

    /// Closes this thread's innermost range.
    pub fn range_pop() {
        let f = core_slot(CORE_RANGE_POP);
        if f != 0 {
            // SAFETY: the slot holds the tool's `nvtxRangePop`, `int (*)(void)`.
            let f: unsafe extern "C" fn() -> c_int = unsafe { std::mem::transmute(f) };
            unsafe { f() };
        }
    }

    /// A range that closes when dropped: `let _r = nvtx::range("phase");`.
    #[must_use = "the range closes when this guard is dropped"]
    pub struct Range(());

    /// Opens a range named `message`, closed when the returned guard drops.
    pub fn range(message: &str) -> Range {
        range_push(message);
        Range(())
    }

    impl Drop for Range {
        fn drop(&mut self) {
            range_pop();
        }
    }

    /// Whether a tool is attached and receives NVTX events.
    pub fn enabled() -> bool {
        attached()
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn export_tables_follow_the_nvtx_layout() {
            // SAFETY: calling our own export functions with valid out-pointers.
            unsafe {
                let callbacks = get_export_table(ETID_CALLBACKS).cast::<ExportTableCallbacks>();
                assert_eq!((*callbacks).struct_size, 16);
                let mut table: *const *mut c_void = std::ptr::null();
                let mut size = 0u32;
                assert_eq!(
                    ((*callbacks).get_module_function_table)(1, &mut table, &mut size),
                    1
                );
                assert_eq!(size, 16);
                assert!((*table).is_null(), "slot 0 is reserved");
                assert!(!(*table.add(CORE_RANGE_PUSH_A)).is_null());
                assert!((*table.add(16)).is_null(), "trailing null");
                // A tool fills a slot by writing through the table entry.
                let slot = (*table.add(CORE_RANGE_POP)).cast::<usize>();
                assert_eq!(slot, SLOTS[MODULE_CORE][CORE_RANGE_POP].as_ptr());
                assert_eq!(
                    ((*callbacks).get_module_function_table)(0, &mut table, &mut size),
                    0
                );
                assert_eq!(
                    ((*callbacks).get_module_function_table)(9, &mut table, &mut size),
                    0
                );
                let version = get_export_table(ETID_VERSIONINFO).cast::<ExportTableVersionInfo>();
                assert_eq!((*version).version, 3);
                assert!(get_export_table(2).is_null());
            }
            // Without a tool every call is a no-op.
            if std::env::var_os(INJECTION_ENV).is_none() {
                assert!(!enabled());
                let _r = range("no tool");
                mark("nothing happens");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_line_reports_rates() {
        let s = KernelStats {
            name: "saxpy".into(),
            time: Duration::from_micros(100),
            launches: 10,
            cost: Cost::bytes(300_000_000).flops(2_000_000_000),
            occupancy: None,
        };
        assert!((s.gb_per_s().unwrap() - 3000.0).abs() < 1e-6);
        assert!((s.gflop_per_s().unwrap() - 20_000.0).abs() < 1e-6);
        let line = s.to_string();
        assert!(line.starts_with("saxpy"), "{line}");
        assert!(line.contains("0.1000 ms/launch (x10)"), "{line}");
        assert!(line.contains("3000.0 GB/s"), "{line}");
        assert!(line.contains("20.00 TFLOP/s"), "{line}");
        let none = KernelStats {
            cost: Cost::default(),
            ..s
        };
        assert!(none.gb_per_s().is_none() && !none.to_string().contains("GB/s"));
    }
}
