//! Device-limit presets: the properties a driver reports for well-known GPUs, so launch
//! validation and occupancy arithmetic can be tested on machines without them.

use gpu_host::DeviceProperties;

/// Limits of an H100 SXM (sm_90), as the driver reports them.
pub fn h100() -> DeviceProperties {
    DeviceProperties {
        ordinal: 0,
        name: "fake H100".to_string(),
        compute_capability: (9, 0),
        multiprocessor_count: 132,
        total_memory: 80 << 30,
        max_threads_per_block: 1024,
        max_block_dims: (1024, 1024, 64),
        max_grid_dims: (2_147_483_647, 65_535, 65_535),
        max_shared_memory_per_block: 48 << 10,
        max_shared_memory_per_block_optin: 227 << 10,
        shared_memory_per_multiprocessor: 228 << 10,
        registers_per_block: 65_536,
        registers_per_multiprocessor: 65_536,
        warp_size: 32,
        max_threads_per_multiprocessor: 2048,
        max_blocks_per_multiprocessor: 32,
        l2_cache_bytes: 50 << 20,
        clock_rate_khz: 1_980_000,
        memory_clock_rate_khz: 2_619_000,
        memory_bus_width_bits: 5120,
    }
}

/// Limits of an A100 SXM (sm_80): 163 KiB of shared memory per block.
pub fn a100() -> DeviceProperties {
    DeviceProperties {
        name: "fake A100".to_string(),
        compute_capability: (8, 0),
        multiprocessor_count: 108,
        total_memory: 80 << 30,
        max_shared_memory_per_block_optin: 163 << 10,
        shared_memory_per_multiprocessor: 164 << 10,
        l2_cache_bytes: 40 << 20,
        clock_rate_khz: 1_410_000,
        memory_clock_rate_khz: 1_593_000,
        ..h100()
    }
}

/// Limits of an RTX 4090 (sm_89): 99 KiB of shared memory per block, 1536 threads and 24
/// blocks per SM.
pub fn rtx4090() -> DeviceProperties {
    DeviceProperties {
        name: "fake RTX 4090".to_string(),
        compute_capability: (8, 9),
        multiprocessor_count: 128,
        total_memory: 24 << 30,
        max_shared_memory_per_block_optin: 99 << 10,
        shared_memory_per_multiprocessor: 100 << 10,
        max_threads_per_multiprocessor: 1536,
        max_blocks_per_multiprocessor: 24,
        l2_cache_bytes: 72 << 20,
        clock_rate_khz: 2_520_000,
        memory_clock_rate_khz: 10_501_000,
        memory_bus_width_bits: 384,
        ..h100()
    }
}
