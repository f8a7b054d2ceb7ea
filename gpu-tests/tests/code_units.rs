//! The code the kernel crates embed: one unit per kernel (or per group sharing module state),
//! each a complete PTX module, with SASS for every listed architecture when the build had
//! ptxas; and on a GPU, SASS and forced PTX running the same kernels to the same results.

use std::path::Path;
use std::process::Command;

use gpu_builder::{ptxas, sass};
use gpu_host::{CodeUnit, Gpu, KernelCode};

fn all_units() -> Vec<(&'static str, &'static [&'static str], &'static [CodeUnit])> {
    vec![
        (
            "algorithm_kernels",
            gpu_algorithms::algorithm_kernels::KERNELS,
            gpu_algorithms::algorithm_kernels::UNITS,
        ),
        (
            "dense_kernels",
            gpu_dense::dense_kernels::KERNELS,
            gpu_dense::dense_kernels::UNITS,
        ),
        (
            "hopper_kernels",
            gpu_dense::hopper_kernels::KERNELS,
            gpu_dense::hopper_kernels::UNITS,
        ),
        (
            "example_kernels",
            gpu_examples::kernels::example_kernels::KERNELS,
            gpu_examples::kernels::example_kernels::UNITS,
        ),
    ]
}

#[test]
fn every_kernel_is_in_exactly_one_complete_unit() {
    for (module, kernels, units) in all_units() {
        for kernel in kernels {
            let holders: Vec<_> = units
                .iter()
                .filter(|u| u.kernels.contains(kernel))
                .collect();
            assert_eq!(
                holders.len(),
                1,
                "{module}::{kernel} is in {} units",
                holders.len()
            );
            let ptx = holders[0].ptx;
            assert!(
                ptx.contains(".version") && ptx.contains(".target"),
                "{module}::{kernel}: unit without a header"
            );
            assert!(
                gpu_host::ptx::entry_names(ptx).iter().any(|e| e == kernel),
                "{module}::{kernel}: its unit does not define it"
            );
        }
        // Besides the kernels, a unit may hold their 32-bit index variants (`k$idx32`,
        // `gpu_builder::index32`), each in its kernel's unit.
        let mut in_units = 0;
        for unit in units {
            for entry in unit.kernels {
                match gpu_host::index32::kernel_of_variant(entry) {
                    Some(kernel) => assert!(
                        unit.kernels.contains(&kernel),
                        "{module}: {entry} is not in its kernel's unit"
                    ),
                    None => in_units += 1,
                }
            }
        }
        assert_eq!(
            in_units,
            kernels.len(),
            "{module}: units name unknown kernels"
        );
        // Only the entries of a unit's kernels are in it: loading one kernel compiles one.
        for unit in units {
            assert_eq!(
                gpu_host::ptx::entry_names(unit.ptx).len(),
                unit.kernels.len(),
                "{module}: unit of {:?} defines other entries",
                unit.kernels
            );
        }
    }
    assert!(
        gpu_algorithms::algorithm_kernels::UNITS.len() > 100,
        "the algorithm kernels are split one unit per kernel"
    );
}

#[test]
fn embedded_sass_covers_every_listed_architecture() {
    let test = "embedded_sass_covers_every_listed_architecture";
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    if ptxas::find(root).is_none() {
        assert!(
            !sass::ptxas_required(),
            "GPU_REQUIRE_PTXAS is set but ptxas was not found"
        );
        gpu_tests::skipped(
            test,
            "ptxas not found: the kernels were embedded as PTX only",
        );
        return;
    }
    let wanted = sass::archs_from_env().unwrap();
    if wanted.is_empty() {
        gpu_tests::skipped(test, "GPU_SASS_ARCHS asks for no SASS");
        return;
    }
    for (module, _, units) in all_units() {
        let pinned = module == "hopper_kernels";
        for unit in units {
            let archs: Vec<&str> = unit.sass.iter().map(|s| s.arch).collect();
            let expected: Vec<String> = if pinned {
                vec!["sm_90a".to_string()]
            } else {
                wanted.iter().map(|a| a.to_string()).collect()
            };
            assert_eq!(archs, expected, "{module}: unit {:?}", unit.kernels);
            for s in unit.sass {
                assert!(
                    s.cubin.starts_with(b"\x7fELF"),
                    "{module}: {} cubin of {:?} is not an ELF file",
                    s.arch,
                    unit.kernels
                );
            }
        }
    }
}

/// Runs a reduce, a scan, a sort and a saxpy and prints each result's bytes as one line, with
/// the code each kernel ran; the parent test compares a SASS run with a forced-PTX run.
const CHILD_ENV: &str = "GPU_TESTS_CODE_UNITS_CHILD";

fn child_run(gpu: &Gpu) -> String {
    use gpu_host::gpu::ops::Sum;
    let algos = gpu_algorithms::Algorithms::load(gpu).unwrap();
    let seed = gpu_examples::ExampleKernels::load(gpu).unwrap();
    let stream = gpu.default_stream();
    let n = 300_000;
    let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 * 0.25).collect();
    let keys: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let dx = gpu.to_device(&x).unwrap();
    let sum = algos.reduce(stream, &dx, Sum, 0.0f32).unwrap();
    let mut scanned = gpu.alloc_zeroed::<f32>(n).unwrap();
    algos
        .inclusive_scan(stream, &dx, &mut scanned, Sum)
        .unwrap();
    let dkeys = gpu.to_device(&keys).unwrap();
    let mut sorted = gpu.alloc_zeroed::<u32>(n).unwrap();
    algos.sort_keys(stream, &dkeys, &mut sorted).unwrap();
    let mut out = gpu.alloc_zeroed::<f32>(n).unwrap();
    seed.saxpy(
        stream,
        gpu_host::LaunchConfig::for_elements(n, 256),
        1.5,
        &dx,
        &scanned,
        &mut out,
    )
    .unwrap();
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            hash = (hash ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    };
    feed(&sum.to_bits().to_le_bytes());
    for v in scanned.to_vec().unwrap() {
        feed(&v.to_bits().to_le_bytes());
    }
    for v in sorted.to_vec().unwrap() {
        feed(&v.to_le_bytes());
    }
    for v in out.to_vec().unwrap() {
        feed(&v.to_bits().to_le_bytes());
    }
    let codes: Vec<String> = algos
        .raw()
        .loaded_kernels()
        .chain(seed.raw().loaded_kernels())
        .map(|k| match k.code() {
            KernelCode::Sass { arch } => format!("{}=sass:{arch}", k.name()),
            KernelCode::Ptx => format!("{}=ptx", k.name()),
            KernelCode::Simulator => format!("{}=sim", k.name()),
        })
        .collect();
    format!("RESULT {hash:016x}\nCODES {}", codes.join(" "))
}

#[test]
fn sass_and_forced_ptx_give_identical_results() {
    let test = "sass_and_forced_ptx_give_identical_results";
    if std::env::var_os(CHILD_ENV).is_some() {
        let gpu = Gpu::first().unwrap();
        // On a line of its own: libtest has already written `test NAME ... ` without a newline.
        println!("\n{}", child_run(&gpu));
        return;
    }
    let Some(gpu) = gpu_tests::cuda_gpu_or_skip(test) else {
        return;
    };
    let (major, minor) = gpu.properties().compute_capability;
    let arch = format!("sm_{major}{minor}");
    let has_sass = gpu_algorithms::algorithm_kernels::UNITS
        .iter()
        .all(|u| u.sass.iter().any(|s| s.arch == arch));
    drop(gpu);
    let run = |force_ptx: bool| -> (String, String) {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, "1")
            .env("CUDA_CACHE_DISABLE", "1");
        if force_ptx {
            cmd.env(gpu_host::code::FORCE_PTX_ENV, "1");
        } else {
            cmd.env_remove(gpu_host::code::FORCE_PTX_ENV);
        }
        let output = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "child (force_ptx={force_ptx}) failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let line = |prefix: &str| {
            stdout
                .lines()
                .find_map(|l| l.split_once(prefix).map(|(_, rest)| rest))
                .unwrap_or_else(|| panic!("no {prefix} line in:\n{stdout}"))
                .to_string()
        };
        (line("RESULT "), line("CODES "))
    };
    let (sass_result, sass_codes) = run(false);
    let (ptx_result, ptx_codes) = run(true);
    println!("default: {sass_codes}\nforced PTX: {ptx_codes}");
    assert_eq!(sass_result, ptx_result, "SASS and PTX runs differ");
    assert!(
        ptx_codes.split(' ').all(|c| c.ends_with("=ptx")),
        "GPU_FORCE_PTX=1 still loaded SASS: {ptx_codes}"
    );
    if has_sass {
        assert!(
            sass_codes
                .split(' ')
                .all(|c| c.ends_with(&format!("=sass:{arch}"))),
            "SASS for {arch} is embedded but the default load did not use it: {sass_codes}"
        );
    } else {
        gpu_tests::skipped(
            test,
            &format!("no SASS for {arch} embedded: compared the PTX route with itself"),
        );
    }
}
