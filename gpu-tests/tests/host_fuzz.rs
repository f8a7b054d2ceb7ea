//! Property tests of the host API paths that need no GPU (they run in CI): random launch
//! configurations against a device's limits, the launch-shape helpers, and the PTX readers fed
//! mutated and random text. Each property must give an error or a correct result, never a
//! panic. A small deterministic generator replaces proptest (not available offline); set
//! `FUZZ_ITERS` for longer runs.

use gpu_host::{DeviceProperties, Dim3, Error, KernelAttributes, LaunchConfig, validate_launch};
use gpu_test_kit::SplitMix64;
use gpu_test_kit::devices::h100;

/// The fuzz draws, on the kit's SplitMix64.
trait Draws {
    fn extent(&mut self) -> u32;
}

impl Draws for SplitMix64 {
    fn extent(&mut self) -> u32 {
        match self.below(10) {
            0 => 0,
            1 => u32::MAX,
            2 => 1 << self.below(32),
            3 => (1u32 << self.below(32)).saturating_add(1),
            4 => 1024 + self.below(3) as u32 - 1,
            _ => 1 + self.below(300) as u32,
        }
    }
}

fn iterations() -> usize {
    std::env::var("FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

/// The launch rules restated independently of `validate_launch`.
fn allowed(cfg: &LaunchConfig, d: &DeviceProperties, a: &KernelAttributes) -> bool {
    let b = [cfg.block.x, cfg.block.y, cfg.block.z];
    let mb = [d.max_block_dims.0, d.max_block_dims.1, d.max_block_dims.2];
    let g = [cfg.grid.x, cfg.grid.y, cfg.grid.z];
    let mg = [d.max_grid_dims.0, d.max_grid_dims.1, d.max_grid_dims.2];
    let threads = b.iter().fold(1u64, |p, &x| p.saturating_mul(x as u64));
    b.iter().zip(mb).all(|(&x, m)| x >= 1 && x <= m)
        && threads <= d.max_threads_per_block as u64
        && (a.max_threads_per_block == 0 || threads <= a.max_threads_per_block as u64)
        && g.iter().zip(mg).all(|(&x, m)| x <= m)
        && a.static_shared_bytes as u64 + cfg.shared_mem_bytes as u64
            <= d.max_shared_memory_per_block_optin
                .max(d.max_shared_memory_per_block) as u64
}

#[test]
fn fuzz_validate_launch_accepts_exactly_the_legal_configurations() {
    let dev = h100();
    let mut rng = SplitMix64::new(7);
    let (mut accepted, mut refused) = (0, 0);
    for i in 0..iterations() {
        let cfg = LaunchConfig::new(
            (rng.extent(), rng.extent(), rng.extent()),
            (rng.extent(), rng.extent(), rng.extent()),
        )
        .with_shared_mem(if rng.below(2) == 0 { 0 } else { rng.extent() });
        let attrs = KernelAttributes {
            max_threads_per_block: [0, 128, 256, 1024][rng.below(4) as usize],
            static_shared_bytes: [0, 4096, 100 << 10][rng.below(3) as usize],
            registers_per_thread: 32,
            ..KernelAttributes::default()
        };
        let expect = allowed(&cfg, &dev, &attrs);
        match validate_launch("k", &cfg, &dev, &attrs) {
            Ok(()) => {
                assert!(expect, "iteration {i}: {cfg} accepted but breaks a limit");
                accepted += 1;
            }
            Err(Error::LaunchConfig { kernel, message }) => {
                assert!(!expect, "iteration {i}: {cfg} refused: {message}");
                assert_eq!(kernel, "k");
                assert!(!message.is_empty());
                refused += 1;
            }
            Err(e) => panic!("iteration {i}: unexpected error {e}"),
        }
    }
    println!("FUZZ validate_launch: {accepted} accepted, {refused} refused");
    assert!(accepted > 0 && refused > 0);
}

#[test]
fn fuzz_launch_shape_helpers_cover_their_input() {
    let dev = h100();
    let attrs = KernelAttributes::default();
    let mut rng = SplitMix64::new(11);
    for i in 0..iterations() {
        let n = match rng.below(4) {
            0 => 0,
            1 => usize::MAX - rng.below(1000) as usize,
            _ => rng.below(1 << 40) as usize,
        };
        let bs = rng.extent();
        let cfg = LaunchConfig::for_elements(n, bs);
        if validate_launch("k", &cfg, &dev, &attrs).is_ok() && !cfg.is_empty() {
            assert!(
                cfg.total_threads() >= n as u64,
                "iteration {i}: {cfg} does not cover {n} elements"
            );
            assert!(
                cfg.total_threads() - (n as u64) < bs as u64,
                "iteration {i}: {cfg}"
            );
        }
        if n == 0 && bs > 0 {
            assert!(cfg.is_empty());
        }
        let (w, h) = (rng.extent(), rng.extent());
        let tile = (rng.extent() % 64, rng.extent() % 64);
        let cfg = LaunchConfig::tiles_2d(w, h, tile);
        if validate_launch("k", &cfg, &dev, &attrs).is_ok() && !cfg.is_empty() {
            assert!(
                cfg.grid.x as u64 * cfg.block.x as u64 >= w as u64,
                "iteration {i}"
            );
            assert!(
                cfg.grid.y as u64 * cfg.block.y as u64 >= h as u64,
                "iteration {i}"
            );
        }
        assert_eq!(Dim3::new(w, h, 1).volume(), w as u64 * h as u64);
    }
}

const SAMPLE_PTX: &str = "\
//
.version 7.0
.target sm_80
.address_size 64

.visible .entry add(
\t.param .u64 .ptr .align 1 add_param_0,
\t.param .u64 add_param_1,
\t.param .align 4 .b8 add_param_2[12]
)
{
\tret;
}
.visible .entry empty()
{
\tret;
}
";

#[test]
fn fuzz_ptx_readers_never_panic_on_mutated_text() {
    assert_eq!(gpu_host::ptx::entry_names(SAMPLE_PTX), ["add", "empty"]);
    assert_eq!(
        gpu_host::ptx::entry_param_sizes(SAMPLE_PTX, "add"),
        Some(vec![8, 8, 12])
    );
    let mut rng = SplitMix64::new(13);
    let alphabet: &[u8] = b".()[]{},; \n\tentryparamu64b8align visible_0123456789";
    let iters = iterations() / 4;
    for _ in 0..iters {
        let mut text = SAMPLE_PTX.as_bytes().to_vec();
        for _ in 0..1 + rng.below(8) {
            let at = rng.below(text.len() as u64 + 1) as usize;
            match rng.below(3) {
                0 if at < text.len() => {
                    text.remove(at);
                }
                1 => text.insert(at, alphabet[rng.below(alphabet.len() as u64) as usize]),
                _ => text.truncate(at),
            }
        }
        let text = String::from_utf8_lossy(&text);
        let names = gpu_host::ptx::entry_names(&text);
        for name in names
            .iter()
            .chain(["add".to_string(), String::new()].iter())
        {
            let _ = gpu_host::ptx::entry_param_sizes(&text, name);
        }
    }
    // Random bytes too.
    for _ in 0..iters {
        let len = rng.below(200) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
            .collect();
        let text = String::from_utf8_lossy(&bytes);
        let _ = gpu_host::ptx::entry_names(&text);
        let _ = gpu_host::ptx::entry_param_sizes(&text, "add");
    }
}

#[test]
fn errors_of_issue_7_say_what_to_do() {
    let panic = gpu_host::KernelPanic {
        kernel: "`k`".into(),
        file: Some("src/lib.rs".into()),
        line: 3,
        column: 5,
        message: Some("boom".into()),
        truncated: false,
        block: (1, 0, 0),
        thread: (2, 0, 0),
        grid_dim: (4, 1, 1),
        block_dim: (32, 1, 1),
    };
    assert_eq!(
        panic.to_string(),
        "kernel `k` panicked at src/lib.rs:3:5 in block (1, 0, 0), thread (2, 0, 0): boom"
    );
    let stale = Error::Stale {
        what: "copying 4 bytes".into(),
    };
    assert!(stale.to_string().contains("Gpu::recover"));
    assert!(!stale.needs_recovery());
    let oom = Error::OutOfMemory {
        context: "allocating".into(),
        requested: 10,
        free: 5,
        total: 8,
    };
    let text = oom.to_string();
    assert!(
        text.contains("10 bytes requested") && text.contains("5 of 8"),
        "{text}"
    );
}
