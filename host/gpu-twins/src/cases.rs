//! The twin pairs: inputs, launch shapes (identical for both sides), CPU references and checks.
//!
//! Each [`Twin`] owns its device buffers. [`Twin::launch`] enqueues one launch of either side;
//! [`check`] clears the outputs, launches once, and compares with the CPU reference.

use gpu_host::{DeviceBuffer, DeviceCopy, Gpu, KernelLaunch, LaunchConfig, Result, Stream};
use gpu_test_kit::SplitMix64;
use gpu_test_kit::rng::unit_f32;
use twin_kernels::{dense, elementwise, image, physics, reduce, sort, stencil, transpose};

use crate::{Kernels, Side, Size};

/// What one launch does, for a throughput column.
#[derive(Debug, Clone, Copy)]
pub enum Work {
    /// Bytes read plus bytes written (at least once each).
    Bytes(f64),
    /// Floating-point operations.
    Flops(f64),
}

impl Work {
    /// `"1234 GB/s"` or `"7.0 TFLOP/s"` for a launch of `ms` milliseconds.
    pub fn rate(self, ms: f32) -> String {
        let s = f64::from(ms) * 1e-3;
        match self {
            Work::Bytes(b) => format!("{:.0} GB/s", b / s / 1e9),
            Work::Flops(f) => format!("{:.2} TFLOP/s", f / s / 1e12),
        }
    }
}

/// One twin pair: a kernel with the same name in `twin-kernels` and in `twins.cu`.
pub trait Twin {
    /// The kernel's name (the same on both sides).
    fn name(&self) -> &'static str;
    /// The problem, in words (sizes).
    fn problem(&self) -> String;
    /// Work per launch.
    fn work(&self) -> Work;
    /// Enqueues one launch of `side` on `stream`.
    fn launch(&mut self, side: Side, kernels: &Kernels, stream: &Stream) -> Result<()>;
    /// Overwrites the outputs with zeros (so a side that writes nothing cannot pass).
    fn clear(&mut self) -> Result<()>;
    /// Compares the outputs with the CPU reference: `Err` names the first mismatch.
    fn verify(&self) -> Result<std::result::Result<(), String>>;
}

/// Clears the outputs, launches `side` once, waits, and compares with the CPU reference.
pub fn check(
    twin: &mut dyn Twin,
    side: Side,
    kernels: &Kernels,
    stream: &Stream,
) -> Result<std::result::Result<(), String>> {
    twin.clear()?;
    twin.launch(side, kernels, stream)?;
    stream.synchronize()?;
    twin.verify()
}

/// Every twin pair at `size`, inputs uploaded and references computed.
pub fn all(gpu: &Gpu, size: Size) -> Result<Vec<Box<dyn Twin>>> {
    let bench = size == Size::Bench;
    let pick = |big: usize, small: usize| if bench { big } else { small };
    let sms = gpu.properties().multiprocessor_count;
    let strided_blocks = |n: usize| (n.div_ceil(256) as u32).clamp(1, sms * 8);
    let twins: Vec<Box<dyn Twin>> = vec![
        Box::new(VectorAdd::new(gpu, pick(1 << 24, 3001))?),
        Box::new(Saxpy::new(gpu, pick(1 << 24, 3001), &strided_blocks)?),
        Box::new(BlackScholes::new(
            gpu,
            pick(1 << 24, 2001),
            &strided_blocks,
        )?),
        Box::new(GrayPlanar::new(gpu, pick(1 << 24, 2003))?),
        Box::new(GrayInterleaved::new(gpu, pick(4096, 50), pick(4096, 37))?),
        Box::new(Convolution::new(gpu, pick(4096, 37), pick(4096, 29))?),
        Box::new(Transpose::new(gpu, false, pick(8192, 70), pick(8192, 45))?),
        Box::new(Transpose::new(gpu, true, pick(8192, 70), pick(8192, 45))?),
        Box::new(ReduceTree::new(gpu, pick(1 << 26, 5003))?),
        Box::new(BlockSum::new(gpu, pick(1 << 26, 5003), &strided_blocks)?),
        Box::new(BlockScan::new(gpu, pick(1 << 24, 3001))?),
        Box::new(Histogram::new(gpu, pick(1 << 28, 20_011), &strided_blocks)?),
        Box::new(Heat::new(gpu, pick(1 << 24, 3001))?),
        Box::new(Jacobi::new(gpu, pick(4096, 50), pick(4096, 37))?),
        Box::new(Sgemm::new(
            gpu,
            pick(2048, 33),
            pick(2048, 47),
            pick(2048, 29),
        )?),
        Box::new(Spmv::new(gpu, pick(1 << 20, 300))?),
        Box::new(NBody::new(gpu, pick(1 << 15, 300))?),
        Box::new(Bitonic::new(gpu, pick(1 << 24, 3 * sort::SORT_TILE))?),
    ];
    Ok(twins)
}

// ---------------------------------------------------------------------------------------------
// Inputs and comparisons

/// Input draws, on the test kit's splitmix64.
trait Draws {
    /// Uniform in `[lo, hi)`.
    fn f32(&mut self, lo: f32, hi: f32) -> f32;
    fn f32s(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32>;
}

impl Draws for SplitMix64 {
    fn f32(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * unit_f32(self.next_u64())
    }

    fn f32s(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.f32(lo, hi)).collect()
    }
}

/// `got` against `want`, element by element, within `abs + rel * |want|`.
fn close(got: &[f32], want: &[f32], rel: f32, abs: f32) -> std::result::Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} values, expected {}", got.len(), want.len()));
    }
    let bad: Vec<usize> = (0..got.len())
        .filter(|&i| {
            let tol = abs + rel * want[i].abs();
            // NaN anywhere counts as a mismatch.
            !matches!(
                (got[i] - want[i]).abs().partial_cmp(&tol),
                Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal)
            )
        })
        .collect();
    match bad.first() {
        None => Ok(()),
        Some(&i) => Err(format!(
            "{} of {} values differ; first at {i}: {} instead of {}",
            bad.len(),
            got.len(),
            got[i],
            want[i]
        )),
    }
}

/// `got == want` element by element.
fn exact<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T]) -> std::result::Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} values, expected {}", got.len(), want.len()));
    }
    let bad = (0..got.len()).filter(|&i| got[i] != want[i]).count();
    match (0..got.len()).find(|&i| got[i] != want[i]) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{bad} of {} values differ; first at {i}: {:?} instead of {:?}",
            got.len(),
            got[i],
            want[i]
        )),
    }
}

fn zero<T: DeviceCopy + Default + Clone>(buf: &mut DeviceBuffer<T>) -> Result<()> {
    let zeros = vec![T::default(); buf.len()];
    buf.copy_from_host(&zeros)
}

/// Starts a launch of the C++ kernel `name`; the caller pushes its arguments in the order of
/// its signature in `twins.cu`.
fn cuda<'a>(
    kernels: &'a Kernels,
    name: &str,
    stream: &'a Stream,
    config: LaunchConfig,
) -> Result<KernelLaunch<'a>> {
    kernels.cuda()?.kernel(name)?.prepare(stream, config)
}

/// Launches a C++ kernel whose arguments were pushed.
fn go(launch: KernelLaunch<'_>) -> Result<()> {
    // SAFETY: every caller pushes exactly the parameters of the kernel's `extern "C"` signature
    // in twins.cu, in order and with the same types (pointers to buffers of the element type
    // the C++ code reads, `int` sizes as i32, `repr(C)` structs laid out like the C++ structs),
    // and the sizes it passes describe those buffers.
    unsafe { launch.launch_foreign() }
}

fn n32(n: usize) -> i32 {
    i32::try_from(n).expect("twin sizes fit the C++ kernels' int")
}

// ---------------------------------------------------------------------------------------------
// The twins

struct VectorAdd {
    a: DeviceBuffer<f32>,
    b: DeviceBuffer<f32>,
    out: DeviceBuffer<f32>,
    want: Vec<f32>,
}

impl VectorAdd {
    fn new(gpu: &Gpu, n: usize) -> Result<Self> {
        let mut rng = SplitMix64::new(1);
        let (a, b) = (rng.f32s(n, -1.0, 1.0), rng.f32s(n, -1.0, 1.0));
        let want = a.iter().zip(&b).map(|(x, y)| x + y).collect();
        Ok(VectorAdd {
            a: gpu.to_device(&a)?,
            b: gpu.to_device(&b)?,
            out: gpu.alloc_zeroed(n)?,
            want,
        })
    }
}

impl Twin for VectorAdd {
    fn name(&self) -> &'static str {
        "vector_add"
    }
    fn problem(&self) -> String {
        format!("n = {}", self.want.len())
    }
    fn work(&self) -> Work {
        Work::Bytes(12.0 * self.want.len() as f64)
    }
    fn launch(&mut self, side: Side, k: &Kernels, s: &Stream) -> Result<()> {
        let n = self.want.len();
        let config = LaunchConfig::for_elements(n, elementwise::BLOCK);
        match side {
            Side::Rust => k
                .rust
                .vector_add(s, config, &self.a, &self.b, &mut self.out),
            Side::Cuda => {
                let mut l = cuda(k, self.name(), s, config)?;
                l.input_ptr("a", &self.a)
                    .input_ptr("b", &self.b)
                    .output_ptr("out", &mut self.out)
                    .value("n", &n32(n));
                go(l)
            }
        }
    }
    fn clear(&mut self) -> Result<()> {
        zero(&mut self.out)
    }
    fn verify(&self) -> Result<std::result::Result<(), String>> {
        Ok(exact(&self.out.to_vec()?, &self.want))
    }
}

struct Saxpy {
    x: DeviceBuffer<f32>,
    y: DeviceBuffer<f32>,
    out: DeviceBuffer<f32>,
    want: Vec<f32>,
    blocks: u32,
}

const ALPHA: f32 = 2.5;

impl Saxpy {
    fn new(gpu: &Gpu, n: usize, blocks: &dyn Fn(usize) -> u32) -> Result<Self> {
        let mut rng = SplitMix64::new(2);
        let (x, y) = (rng.f32s(n, -1.0, 1.0), rng.f32s(n, -1.0, 1.0));
        let want = x.iter().zip(&y).map(|(x, y)| ALPHA * x + y).collect();
        Ok(Saxpy {
            x: gpu.to_device(&x)?,
            y: gpu.to_device(&y)?,
            out: gpu.alloc_zeroed(n)?,
            want,
            blocks: blocks(n),
        })
    }
}

impl Twin for Saxpy {
    fn name(&self) -> &'static str {
        "saxpy"
    }
    fn problem(&self) -> String {
        format!(
            "n = {}, {} blocks (grid-stride)",
            self.want.len(),
            self.blocks
        )
    }
    fn work(&self) -> Work {
        Work::Bytes(12.0 * self.want.len() as f64)
    }
    fn launch(&mut self, side: Side, k: &Kernels, s: &Stream) -> Result<()> {
        let config = LaunchConfig::new(self.blocks, elementwise::BLOCK);
        match side {
            Side::Rust => k
                .rust
                .saxpy(s, config, ALPHA, &self.x, &self.y, &mut self.out),
            Side::Cuda => {
                let mut l = cuda(k, self.name(), s, config)?;
                l.value("alpha", &ALPHA)
                    .input_ptr("x", &self.x)
                    .input_ptr("y", &self.y)
                    .output_ptr("out", &mut self.out)
                    .value("n", &n32(self.want.len()));
                go(l)
            }
        }
    }
    fn clear(&mut self) -> Result<()> {
        zero(&mut self.out)
    }
    fn verify(&self) -> Result<std::result::Result<(), String>> {
        Ok(close(&self.out.to_vec()?, &self.want, 1e-6, 1e-6))
    }
}

struct BlackScholes {
    price: DeviceBuffer<f32>,
    strike: DeviceBuffer<f32>,
    years: DeviceBuffer<f32>,
    call: DeviceBuffer<f32>,
    put: DeviceBuffer<f32>,
    want: (Vec<f32>, Vec<f32>),
    blocks: u32,
}

const MARKET: elementwise::Market = elementwise::Market {
    riskfree: 0.02,
    volatility: 0.30,
};

fn black_scholes_cpu(s: f32, x: f32, t: f32) -> (f32, f32) {
    let (s, x, t) = (f64::from(s), f64::from(x), f64::from(t));
    let (r, v) = (f64::from(MARKET.riskfree), f64::from(MARKET.volatility));
    let cnd = |d: f64| {
        let k = 1.0 / (1.0 + 0.231_641_9 * d.abs());
        let poly = k
            * (0.319_381_53
                + k * (-0.356_563_782
                    + k * (1.781_477_937 + k * (-1.821_255_978 + k * 1.330_274_429))));
        let c = 0.398_942_280_401_432_7 * (-0.5 * d * d).exp() * poly;
        if d > 0.0 { 1.0 - c } else { c }
    };
    let d1 = ((s / x).ln() + (r + 0.5 * v * v) * t) / (v * t.sqrt());
    let d2 = d1 - v * t.sqrt();
    let discounted = x * (-r * t).exp();
    let call = s * cnd(d1) - discounted * cnd(d2);
    let put = discounted * (1.0 - cnd(d2)) - s * (1.0 - cnd(d1));
    (call as f32, put as f32)
}

impl BlackScholes {
    fn new(gpu: &Gpu, n: usize, blocks: &dyn Fn(usize) -> u32) -> Result<Self> {
        let mut rng = SplitMix64::new(3);
        let price = rng.f32s(n, 5.0, 30.0);
        let strike = rng.f32s(n, 1.0, 100.0);
        let years = rng.f32s(n, 0.25, 10.0);
        let (call, put) = (0..n)
            .map(|i| black_scholes_cpu(price[i], strike[i], years[i]))
            .unzip();
        Ok(BlackScholes {
            price: gpu.to_device(&price)?,
            strike: gpu.to_device(&strike)?,
            years: gpu.to_device(&years)?,
            call: gpu.alloc_zeroed(n)?,
            put: gpu.alloc_zeroed(n)?,
            want: (call, put),
            blocks: blocks(n),
        })
    }
}

impl Twin for BlackScholes {
    fn name(&self) -> &'static str {
        "black_scholes"
    }
    fn problem(&self) -> String {
        format!(
            "{} options, {} blocks (grid-stride)",
            self.want.0.len(),
            self.blocks
        )
    }
    fn work(&self) -> Work {
        Work::Bytes(20.0 * self.want.0.len() as f64)
    }
    fn launch(&mut self, side: Side, k: &Kernels, s: &Stream) -> Result<()> {
        let config = LaunchConfig::new(self.blocks, elementwise::BLOCK);
        let n = self.want.0.len();
        match side {
            Side::Rust => k.rust.black_scholes(
                s,
                config,
                &self.price,
                &self.strike,
                &self.years,
                MARKET,
                &mut self.call,
                &mut self.put,
            ),
            Side::Cuda => {
                let mut l = cuda(k, self.name(), s, config)?;
                l.input_ptr("price", &self.price)
                    .input_ptr("strike", &self.strike)
                    .input_ptr("years", &self.years)
                    .value("market", &MARKET)
                    .output_ptr("call", &mut self.call)
                    .output_ptr("put", &mut self.put)
                    .value("n", &n32(n));
                go(l)
            }
        }
    }
    fn clear(&mut self) -> Result<()> {
        zero(&mut self.call)?;
        zero(&mut self.put)
    }
    fn verify(&self) -> Result<std::result::Result<(), String>> {
        // Fast hardware exp/log on the device: a few ulp, amplified by the prices.
        Ok(close(&self.call.to_vec()?, &self.want.0, 1e-3, 2e-3)
            .map_err(|e| format!("call: {e}"))
            .and(
                close(&self.put.to_vec()?, &self.want.1, 1e-3, 2e-3)
                    .map_err(|e| format!("put: {e}")),
            ))
    }
}

struct GrayPlanar {
    rgb: [DeviceBuffer<f32>; 3],
    gray: DeviceBuffer<f32>,
    want: Vec<f32>,
}

impl GrayPlanar {
    fn new(gpu: &Gpu, n: usize) -> Result<Self> {
        let mut rng = SplitMix64::new(4);
        let planes = [
            rng.f32s(n, 0.0, 1.0),
            rng.f32s(n, 0.0, 1.0),
            rng.f32s(n, 0.0, 1.0),
        ];
        let want = (0..n)
            .map(|i| 0.299 * planes[0][i] + 0.587 * planes[1][i] + 0.114 * planes[2][i])
            .collect();
        Ok(GrayPlanar {
            rgb: [
                gpu.to_device(&planes[0])?,
                gpu.to_device(&planes[1])?,
                gpu.to_device(&planes[2])?,
            ],
            gray: gpu.alloc_zeroed(n)?,
            want,
        })
    }
}

impl Twin for GrayPlanar {
    fn name(&self) -> &'static str {
        "rgb_to_gray_planar"
    }
    fn problem(&self) -> String {
        format!("{} pixels, f32 planes", self.want.len())
    }
    fn work(&self) -> Work {
        Work::Bytes(16.0 * self.want.len() as f64)
    }
    fn launch(&mut self, side: Side, k: &Kernels, s: &Stream) -> Result<()> {
        let n = self.want.len();
        let config = LaunchConfig::for_elements(n, elementwise::BLOCK);
        let [r, g, b] = &self.rgb;
        match side {
            Side::Rust => k
                .rust
                .rgb_to_gray_planar(s, config, r, g, b, &mut self.gray),
            Side::Cuda => {
                let mut l = cuda(k, self.name(), s, config)?;
                l.input_ptr("r", r)
                    .input_ptr("g", g)
                    .input_ptr("b", b)
                    .output_ptr("gray", &mut self.gray)
                    .value("n", &n32(n));
                go(l)
            }
        }
    }
    fn clear(&mut self) -> Result<()> {
        zero(&mut self.gray)
    }
    fn verify(&self) -> Result<std::result::Result<(), String>> {
        Ok(close(&self.gray.to_vec()?, &self.want, 1e-6, 1e-6))
    }
}

struct GrayInterleaved {
    rgb: DeviceBuffer<u8>,
    gray: DeviceBuffer<u8>,
    want: Vec<u8>,
    width: u32,
    height: u32,
}

impl GrayInterleaved {
    fn new(gpu: &Gpu, width: usize, height: usize) -> Result<Self> {
        let mut rng = SplitMix64::new(5);
        let rgb: Vec<u8> = (0..3 * width * height)
            .map(|_| rng.next_u64() as u8)
            .collect();
        let want = rgb
            .chunks_exact(3)
            .map(|p| {
                let (r, g, b) = (f32::from(p[0]), f32::from(p[1]), f32::from(p[2]));
                (0.21 * r + 0.71 * g + 0.07 * b) as u8
            })
            .collect();
        Ok(GrayInterleaved {
            rgb: gpu.to_device(&rgb)?,
            gray: gpu.alloc_zeroed(width * height)?,
            want,
            width: width as u32,
            height: height as u32,
        })
    }
}

impl Twin for GrayInterleaved {
    fn name(&self) -> &'static str {
        "rgb_to_gray_interleaved"
    }
    fn problem(&self) -> String {
        format!("{}x{} RGB8 -> gray8", self.width, self.height)
    }
    fn work(&self) -> Work {
        Work::Bytes(4.0 * self.want.len() as f64)
    }
    fn launch(&mut self, side: Side, k: &Kernels, s: &Stream) -> Result<()> {
        let config = LaunchConfig::tiles_2d(self.width, self.height, image::BLOCK_2D);
        match side {
            Side::Rust => k.rust.rgb_to_gray_interleaved(
                s,
                config,
                &self.rgb,
                self.width,
                self.height,
                &mut self.gray,
            ),
            Side::Cuda => {
                let mut l = cuda(k, self.name(), s, config)?;
                l.input_ptr("rgb", &self.rgb)
                    .value("width", &(self.width as i32))
                    .value("height", &(self.height as i32))
                    .output_ptr("gray", &mut self.gray);
                go(l)
            }
        }
    }
    fn clear(&mut self) -> Result<()> {
        zero(&mut self.gray)
    }
    fn verify(&self) -> Result<std::result::Result<(), String>> {
        // The weighted sum may round to either side of an integer (fma vs separate multiply).
        let got = self.gray.to_vec()?;
        let off = (0..got.len()).find(|&i| got[i].abs_diff(self.want[i]) > 1);
        Ok(match off {
            None => Ok(()),
            Some(i) => Err(format!("pixel {i}: {} instead of {}", got[i], self.want[i])),
        })
    }
}

struct Convolution {
    image: DeviceBuffer<f32>,
    filter: DeviceBuffer<f32>,
    out: DeviceBuffer<f32>,
    want: Vec<f32>,
    width: u32,
    height: u32,
}

impl Convolution {
    fn new(gpu: &Gpu, width: usize, height: usize) -> Result<Self> {
        let mut rng = SplitMix64::new(6);
        let img = rng.f32s(width * height, 0.0, 1.0);
        let f = image::FILTER;
        let filter = rng.f32s(f * f, -1.0, 1.0);
        let r = (f / 2) as i64;
        let mut want = vec![0.0f32; width * height];
        for row in 0..height as i64 {
            for col in 0..width as i64 {
                let mut sum = 0.0f32;
                for fy in 0..f {
                    for fx in 0..f {
                        let (y, x) = (row + fy as i64 - r, col + fx as i64 - r);
                        if y >= 0 && y < height as i64 && x >= 0 && x < width as i64 {
                            sum += filter[fy * f + fx] * img[(y * width as i64 + x) as usize];
                        }
                    }
                }
                want[(row * width as i64 + col) as usize] = sum;
            }
        }
        Ok(Convolution {
            image: gpu.to_device(&img)?,
            filter: gpu.to_device(&filter)?,
            out: gpu.alloc_zeroed(width * height)?,
            want,
            width: width as u32,
            height: height as u32,
        })
    }
}

impl Twin for Convolution {
    fn name(&self) -> &'static str {
        "convolution_2d"
    }
    fn problem(&self) -> String {
        format!(
            "{}x{}, {f}x{f} filter",
            self.width,
            self.height,
            f = image::FILTER
        )
    }
    fn work(&self) -> Work {
        Work::Bytes(8.0 * self.want.len() as f64)
    }
    fn launch(&mut self, side: Side, k: &Kernels, s: &Stream) -> Result<()> {
        let config = LaunchConfig::tiles_2d(self.width, self.height, image::BLOCK_2D);
        match side {
            Side::Rust => k.rust.convolution_2d(
                s,
                config,
                &self.image,
                &self.filter,
                self.width,
                self.height,
                &mut self.out,
            ),
            Side::Cuda => {
                let mut l = cuda(k, self.name(), s, config)?;
                l.input_ptr("image", &self.image)
                    .input_ptr("filter", &self.filter)
                    .value("width", &(self.width as i32))
                    .value("height", &(self.height as i32))
                    .output_ptr("out", &mut self.out);
                go(l)
            }
        }
    }
    fn clear(&mut self) -> Result<()> {
        zero(&mut self.out)
    }
    fn verify(&self) -> Result<std::result::Result<(), String>> {
        Ok(close(&self.out.to_vec()?, &self.want, 1e-5, 1e-5))
    }
}

struct Transpose {
    tiled: bool,
    input: DeviceBuffer<f32>,
    out: DeviceBuffer<f32>,
    want: Vec<f32>,
    width: u32,
    height: u32,
}

impl Transpose {
    fn new(gpu: &Gpu, tiled: bool, width: usize, height: usize) -> Result<Self> {
        let input = SplitMix64::new(7).f32s(width * height, -1.0, 1.0);
        let mut want = vec![0.0f32; width * height];
        for y in 0..height {
            for x in 0..width {
                want[x * height + y] = input[y * width + x];
            }
        }
        Ok(Transpose {
            tiled,
            input: gpu.to_device(&input)?,
            out: gpu.alloc_zeroed(width * height)?,
            want,
            width: width as u32,
            height: height as u32,
        })
    }
}

impl Twin for Transpose {
    fn name(&self) -> &'static str {
        if self.tiled {
            "transpose_tiled"
        } else {
            "transpose_naive"
        }
    }
    fn problem(&self) -> String {
        format!("{}x{} f32", self.width, self.height)
    }
    fn work(&self) -> Work {
        Work::Bytes(8.0 * self.want.len() as f64)
    }
    fn launch(&mut self, side: Side, k: &Kernels, s: &Stream) -> Result<()> {
        let tile = transpose::TILE as u32;
        let config = LaunchConfig::new(
            (self.width.div_ceil(tile), self.height.div_ceil(tile)),
            (tile, transpose::ROWS as u32),
        );
        let (w, h) = (self.width, self.height);
        match (side, self.tiled) {
            (Side::Rust, false) => {
                k.rust
                    .transpose_naive(s, config, &self.input, w, h, &mut self.out)
            }
            (Side::Rust, true) => {
                k.rust
                    .transpose_tiled(s, config, &self.input, w, h, &mut self.out)
            }
            (Side::Cuda, _) => {
                let mut l = cuda(k, self.name(), s, config)?;
                l.input_ptr("input", &self.input)
                    .value("width", &(w as i32))
                    .value("height", &(h as i32))
                    .output_ptr("out", &mut self.out);
                go(l)
            }
        }
    }
    fn clear(&mut self) -> Result<()> {
        zero(&mut self.out)
    }
    fn verify(&self) -> Result<std::result::Result<(), String>> {
        Ok(exact(&self.out.to_vec()?, &self.want))
    }
}

/// Sums in f64 to compare f32 partial sums against.
fn sum64(values: &[f32]) -> f64 {
    values.iter().map(|&v| f64::from(v)).sum()
}

struct ReduceTree {
    input: DeviceBuffer<f32>,
    sums: DeviceBuffer<f32>,
    want: Vec<f32>,
    n: usize,
}

impl ReduceTree {
    fn new(gpu: &Gpu, n: usize) -> Result<Self> {
        let input = SplitMix64::new(8).f32s(n, -1.0, 1.0);
        let per_block = 2 * reduce::BLOCK as usize;
        let want = input
            .chunks(per_block)
            .map(|c| sum64(c) as f32)
            .collect::<Vec<_>>();
        Ok(ReduceTree {
            input: gpu.to_device(&input)?,
            sums: gpu.alloc_zeroed(want.len())?,
            want,
            n,
        })
    }
}

impl Twin for ReduceTree {
    fn name(&self) -> &'static str {
        "reduce_shared_tree"
    }
    fn problem(&self) -> String {
        format!("n = {} f32, {} block sums", self.n, self.want.len())
    }
    fn work(&self) -> Work {
        Work::Bytes(4.0 * self.n as f64)
    }
    fn launch(&mut self, side: Side, k: &Kernels, s: &Stream) -> Result<()> {
        let config = LaunchConfig::new(self.want.len() as u32, reduce::BLOCK);
        match side {
            Side::Rust => k
                .rust
                .reduce_shared_tree(s, config, &self.input, &mut self.sums),
            Side::Cuda => {
                let mut l = cuda(k, self.name(), s, config)?;
                l.input_ptr("input", &self.input)
                    .output_ptr("block_sums", &mut self.sums)
                    .value("n", &n32(self.n));
                go(l)
            }
        }
    }
    fn clear(&mut self) -> Result<()> {
        zero(&mut self.sums)
    }
    fn verify(&self) -> Result<std::result::Result<(), String>> {
        Ok(close(&self.sums.to_vec()?, &self.want, 1e-4, 1e-4))
    }
}

struct BlockSum {
    input: DeviceBuffer<f32>,
    sums: DeviceBuffer<f32>,
    want: Vec<f32>,
    n: usize,
}

impl BlockSum {
    fn new(gpu: &Gpu, n: usize, blocks: &dyn Fn(usize) -> u32) -> Result<Self> {
        let input = SplitMix64::new(9).f32s(n, -1.0, 1.0);
        let blocks = blocks(n) as usize;
        let threads = blocks * reduce::BLOCK as usize;
        // Block b sums the elements of its threads' grid-stride sequences.
        let mut want = vec![0.0f64; blocks];
        for (i, &v) in input.iter().enumerate() {
            want[(i % threads) / reduce::BLOCK as usize] += f64::from(v);
        }
        Ok(BlockSum {
            input: gpu.to_device(&input)?,
            sums: gpu.alloc_zeroed(blocks)?,
            want: want.into_iter().map(|v| v as f32).collect(),
            n,
        })
    }
}

impl Twin for BlockSum {
    fn name(&self) -> &'static str {
        "block_sum_grid_stride"
    }
    fn problem(&self) -> String {
        format!(
            "n = {} f32, {} blocks (grid-stride)",
            self.n,
            self.want.len()
        )
    }
    fn work(&self) -> Work {
        Work::Bytes(4.0 * self.n as f64)
    }
    fn launch(&mut self, side: Side, k: &Kernels, s: &Stream) -> Result<()> {
        let config = LaunchConfig::new(self.want.len() as u32, reduce::BLOCK);
        match side {
            Side::Rust => k
                .rust
                .block_sum_grid_stride(s, config, &self.input, &mut self.sums),
            Side::Cuda => {
                let mut l = cuda(k, self.name(), s, config)?;
                l.input_ptr("input", &self.input)
                    .output_ptr("block_sums", &mut self.sums)
                    .value("n", &n32(self.n));
                go(l)
            }
        }
    }
    fn clear(&mut self) -> Result<()> {
        zero(&mut self.sums)
    }
    fn verify(&self) -> Result<std::result::Result<(), String>> {
        // Each thread's running f32 sum over its strided elements: allow for its rounding.
        let per_thread = self.n.div_ceil(self.want.len() * reduce::BLOCK as usize) as f32;
        Ok(close(
            &self.sums.to_vec()?,
            &self.want,
            1e-4,
            1e-5 * per_thread * 256.0,
        ))
    }
}

struct BlockScan {
    input: DeviceBuffer<f32>,
    out: DeviceBuffer<f32>,
    want: Vec<f32>,
}

impl BlockScan {
    fn new(gpu: &Gpu, n: usize) -> Result<Self> {
        let input = SplitMix64::new(10).f32s(n, -1.0, 1.0);
        let mut want = Vec::with_capacity(n);
        for block in input.chunks(reduce::BLOCK as usize) {
            let mut acc = 0.0f64;
            want.extend(block.iter().map(|&v| {
                acc += f64::from(v);
                acc as f32
            }));
        }
        Ok(BlockScan {
            input: gpu.to_device(&input)?,
            out: gpu.alloc_zeroed(n)?,
            want,
        })
    }
}

impl Twin for BlockScan {
    fn name(&self) -> &'static str {
        "block_scan"
    }
    fn problem(&self) -> String {
        format!(
            "n = {} f32, scans of {} elements",
            self.want.len(),
            reduce::BLOCK
        )
    }
    fn work(&self) -> Work {
        Work::Bytes(8.0 * self.want.len() as f64)
    }
    fn launch(&mut self, side: Side, k: &Kernels, s: &Stream) -> Result<()> {
        let n = self.want.len();
        let config = LaunchConfig::for_elements(n, reduce::BLOCK);
        match side {
            Side::Rust => k.rust.block_scan(s, config, &self.input, &mut self.out),
            Side::Cuda => {
                let mut l = cuda(k, self.name(), s, config)?;
                l.input_ptr("input", &self.input)
                    .output_ptr("out", &mut self.out)
                    .value("n", &n32(n));
                go(l)
            }
        }
    }
    fn clear(&mut self) -> Result<()> {
        zero(&mut self.out)
    }
    fn verify(&self) -> Result<std::result::Result<(), String>> {
        Ok(close(&self.out.to_vec()?, &self.want, 1e-4, 1e-4))
    }
}

struct Histogram {
    data: DeviceBuffer<u8>,
    bins: DeviceBuffer<u32>,
    want: Vec<u32>,
    n: usize,
    blocks: u32,
}

impl Histogram {
    fn new(gpu: &Gpu, n: usize, blocks: &dyn Fn(usize) -> u32) -> Result<Self> {
        let mut rng = SplitMix64::new(11);
        // Skewed bytes (a sum of two uniform bytes, halved): contention like real data.
        let data: Vec<u8> = (0..n)
            .map(|_| {
                let r = rng.next_u64();
                ((r as u8 as u16 + (r >> 8) as u8 as u16) / 2) as u8
            })
            .collect();
        let mut want = vec![0u32; reduce::BINS];
        for &b in &data {
            want[b as usize] += 1;
        }
        Ok(Histogram {
            data: gpu.to_device(&data)?,
            bins: gpu.alloc_zeroed(reduce::BINS)?,
            want,
            n,
            blocks: blocks(n),
        })
    }
}

impl Twin for Histogram {
    fn name(&self) -> &'static str {
        "histogram_256"
    }
    fn problem(&self) -> String {
        format!("{} bytes, {} blocks (grid-stride)", self.n, self.blocks)
    }
    fn work(&self) -> Work {
        Work::Bytes(self.n as f64)
    }
    fn launch(&mut self, side: Side, k: &Kernels, s: &Stream) -> Result<()> {
        let config = LaunchConfig::new(self.blocks, reduce::BLOCK);
        match side {
            Side::Rust => k.rust.histogram_256(s, config, &self.data, &mut self.bins),
            Side::Cuda => {
                let mut l = cuda(k, self.name(), s, config)?;
                l.input_ptr("data", &self.data)
                    .value("n", &n32(self.n))
                    .output_ptr("bins", &mut self.bins);
                go(l)
            }
        }
    }
    fn clear(&mut self) -> Result<()> {
        zero(&mut self.bins)
    }
    fn verify(&self) -> Result<std::result::Result<(), String>> {
        Ok(exact(&self.bins.to_vec()?, &self.want))
    }
}

struct Heat {
    u: DeviceBuffer<f32>,
    out: DeviceBuffer<f32>,
    want: Vec<f32>,
}

const ALPHA_HEAT: f32 = 0.25;

impl Heat {
    fn new(gpu: &Gpu, n: usize) -> Result<Self> {
        let u = SplitMix64::new(12).f32s(n, 0.0, 100.0);
        let want = (0..n)
            .map(|i| {
                if i == 0 || i == n - 1 {
                    u[i]
                } else {
                    u[i] + ALPHA_HEAT * (u[i - 1] - 2.0 * u[i] + u[i + 1])
                }
            })
            .collect();
        Ok(Heat {
            u: gpu.to_device(&u)?,
            out: gpu.alloc_zeroed(n)?,
            want,
        })
    }
}

impl Twin for Heat {
    fn name(&self) -> &'static str {
        "heat_step_1d"
    }
    fn problem(&self) -> String {
        format!("n = {} f32", self.want.len())
    }
    fn work(&self) -> Work {
        Work::Bytes(8.0 * self.want.len() as f64)
    }
    fn launch(&mut self, side: Side, k: &Kernels, s: &Stream) -> Result<()> {
        let n = self.want.len();
        let config = LaunchConfig::for_elements(n, stencil::BLOCK);
        match side {
            Side::Rust => k
                .rust
                .heat_step_1d(s, config, &self.u, ALPHA_HEAT, &mut self.out),
            Side::Cuda => {
                let mut l = cuda(k, self.name(), s, config)?;
                l.input_ptr("u", &self.u)
                    .value("alpha", &ALPHA_HEAT)
                    .output_ptr("out", &mut self.out)
                    .value("n", &n32(n));
                go(l)
            }
        }
    }
    fn clear(&mut self) -> Result<()> {
        zero(&mut self.out)
    }
    fn verify(&self) -> Result<std::result::Result<(), String>> {
        Ok(close(&self.out.to_vec()?, &self.want, 1e-5, 1e-4))
    }
}

struct Jacobi {
    u: DeviceBuffer<f32>,
    out: DeviceBuffer<f32>,
    want: Vec<f32>,
    width: u32,
    height: u32,
}

impl Jacobi {
    fn new(gpu: &Gpu, width: usize, height: usize) -> Result<Self> {
        let u = SplitMix64::new(13).f32s(width * height, 0.0, 1.0);
        let mut want = u.clone();
        for y in 1..height - 1 {
            for x in 1..width - 1 {
                let i = y * width + x;
                want[i] = 0.25 * (u[i - 1] + u[i + 1] + u[i - width] + u[i + width]);
            }
        }
        Ok(Jacobi {
            u: gpu.to_device(&u)?,
            out: gpu.alloc_zeroed(width * height)?,
            want,
            width: width as u32,
            height: height as u32,
        })
    }
}

impl Twin for Jacobi {
    fn name(&self) -> &'static str {
        "jacobi_step_2d"
    }
    fn problem(&self) -> String {
        format!("{}x{} f32", self.width, self.height)
    }
    fn work(&self) -> Work {
        Work::Bytes(8.0 * self.want.len() as f64)
    }
    fn launch(&mut self, side: Side, k: &Kernels, s: &Stream) -> Result<()> {
        let config = LaunchConfig::tiles_2d(self.width, self.height, stencil::BLOCK_2D);
        let (w, h) = (self.width, self.height);
        match side {
            Side::Rust => k
                .rust
                .jacobi_step_2d(s, config, &self.u, w, h, &mut self.out),
            Side::Cuda => {
                let mut l = cuda(k, self.name(), s, config)?;
                l.input_ptr("u", &self.u)
                    .value("width", &(w as i32))
                    .value("height", &(h as i32))
                    .output_ptr("out", &mut self.out);
                go(l)
            }
        }
    }
    fn clear(&mut self) -> Result<()> {
        zero(&mut self.out)
    }
    fn verify(&self) -> Result<std::result::Result<(), String>> {
        Ok(close(&self.out.to_vec()?, &self.want, 1e-6, 1e-6))
    }
}

struct Sgemm {
    a: DeviceBuffer<f32>,
    b: DeviceBuffer<f32>,
    c: DeviceBuffer<f32>,
    want: Vec<f32>,
    dims: dense::Dims,
}

impl Sgemm {
    fn new(gpu: &Gpu, m: usize, n: usize, k: usize) -> Result<Self> {
        let mut rng = SplitMix64::new(14);
        let (a, b) = (rng.f32s(m * k, -1.0, 1.0), rng.f32s(k * n, -1.0, 1.0));
        let mut want = vec![0.0f32; m * n];
        // The CPU reference in f64, row by row (a 2048^3 check takes a few seconds).
        for (i, row) in want.chunks_mut(n).enumerate() {
            let mut acc = vec![0.0f64; n];
            for p in 0..k {
                let av = f64::from(a[i * k + p]);
                for (j, acc) in acc.iter_mut().enumerate() {
                    *acc += av * f64::from(b[p * n + j]);
                }
            }
            for (out, acc) in row.iter_mut().zip(acc) {
                *out = acc as f32;
            }
        }
        Ok(Sgemm {
            a: gpu.to_device(&a)?,
            b: gpu.to_device(&b)?,
            c: gpu.alloc_zeroed(m * n)?,
            want,
            dims: dense::Dims {
                m: m as u32,
                n: n as u32,
                k: k as u32,
            },
        })
    }
}

impl Twin for Sgemm {
    fn name(&self) -> &'static str {
        "sgemm_tiled"
    }
    fn problem(&self) -> String {
        format!("{}x{}x{} f32", self.dims.m, self.dims.n, self.dims.k)
    }
    fn work(&self) -> Work {
        let d = self.dims;
        Work::Flops(2.0 * f64::from(d.m) * f64::from(d.n) * f64::from(d.k))
    }
    fn launch(&mut self, side: Side, k: &Kernels, s: &Stream) -> Result<()> {
        let t = dense::TILE;
        let config = LaunchConfig::tiles_2d(self.dims.n, self.dims.m, (t, t));
        match side {
            Side::Rust => k
                .rust
                .sgemm_tiled(s, config, &self.a, &self.b, self.dims, &mut self.c),
            Side::Cuda => {
                let mut l = cuda(k, self.name(), s, config)?;
                l.input_ptr("a", &self.a)
                    .input_ptr("b", &self.b)
                    .value("dims", &self.dims)
                    .output_ptr("c", &mut self.c);
                go(l)
            }
        }
    }
    fn clear(&mut self) -> Result<()> {
        zero(&mut self.c)
    }
    fn verify(&self) -> Result<std::result::Result<(), String>> {
        let tol = 1e-5 * self.dims.k as f32;
        Ok(close(&self.c.to_vec()?, &self.want, tol, tol))
    }
}

struct Spmv {
    row_start: DeviceBuffer<u32>,
    columns: DeviceBuffer<u32>,
    values: DeviceBuffer<f32>,
    x: DeviceBuffer<f32>,
    y: DeviceBuffer<f32>,
    want: Vec<f32>,
    nonzeros: usize,
}

impl Spmv {
    fn new(gpu: &Gpu, rows: usize) -> Result<Self> {
        let mut rng = SplitMix64::new(15);
        let mut row_start = vec![0u32];
        let (mut columns, mut values) = (Vec::new(), Vec::new());
        for _ in 0..rows {
            let count = 8 + (rng.next_u64() % 17) as usize; // 8..=24 entries, 16 on average
            for _ in 0..count {
                columns.push((rng.next_u64() % rows as u64) as u32);
                values.push(rng.f32(-1.0, 1.0));
            }
            row_start.push(columns.len() as u32);
        }
        let x = rng.f32s(rows, -1.0, 1.0);
        let want = (0..rows)
            .map(|r| {
                (row_start[r] as usize..row_start[r + 1] as usize)
                    .map(|j| f64::from(values[j]) * f64::from(x[columns[j] as usize]))
                    .sum::<f64>() as f32
            })
            .collect();
        Ok(Spmv {
            row_start: gpu.to_device(&row_start)?,
            columns: gpu.to_device(&columns)?,
            values: gpu.to_device(&values)?,
            x: gpu.to_device(&x)?,
            y: gpu.alloc_zeroed(rows)?,
            want,
            nonzeros: columns.len(),
        })
    }
}

impl Twin for Spmv {
    fn name(&self) -> &'static str {
        "spmv_csr"
    }
    fn problem(&self) -> String {
        format!(
            "{} rows, {} nonzeros (CSR, random columns)",
            self.want.len(),
            self.nonzeros
        )
    }
    fn work(&self) -> Work {
        // Values and column indices once, x gathered, row starts and y once.
        Work::Bytes(12.0 * self.nonzeros as f64 + 8.0 * self.want.len() as f64)
    }
    fn launch(&mut self, side: Side, k: &Kernels, s: &Stream) -> Result<()> {
        let rows = self.want.len();
        let config = LaunchConfig::for_elements(rows, twin_kernels::sparse::BLOCK);
        match side {
            Side::Rust => k.rust.spmv_csr(
                s,
                config,
                &self.row_start,
                &self.columns,
                &self.values,
                &self.x,
                &mut self.y,
            ),
            Side::Cuda => {
                let mut l = cuda(k, self.name(), s, config)?;
                l.input_ptr("row_start", &self.row_start)
                    .input_ptr("columns", &self.columns)
                    .input_ptr("values", &self.values)
                    .input_ptr("x", &self.x)
                    .output_ptr("y", &mut self.y)
                    .value("rows", &n32(rows));
                go(l)
            }
        }
    }
    fn clear(&mut self) -> Result<()> {
        zero(&mut self.y)
    }
    fn verify(&self) -> Result<std::result::Result<(), String>> {
        Ok(close(&self.y.to_vec()?, &self.want, 1e-4, 1e-4))
    }
}

struct NBody {
    bodies: DeviceBuffer<physics::Body>,
    accel: DeviceBuffer<physics::Body>,
    want: Vec<[f32; 3]>,
}

impl NBody {
    fn new(gpu: &Gpu, n: usize) -> Result<Self> {
        let mut rng = SplitMix64::new(16);
        let bodies: Vec<physics::Body> = (0..n)
            .map(|_| physics::Body {
                x: rng.f32(-1.0, 1.0),
                y: rng.f32(-1.0, 1.0),
                z: rng.f32(-1.0, 1.0),
                mass: rng.f32(0.5, 1.0),
            })
            .collect();
        let want = if n <= 4096 {
            bodies
                .iter()
                .map(|me| {
                    let mut a = [0.0f64; 3];
                    for o in &bodies {
                        let d = [o.x - me.x, o.y - me.y, o.z - me.z].map(f64::from);
                        let dist2 = d[0] * d[0]
                            + d[1] * d[1]
                            + d[2] * d[2]
                            + f64::from(physics::SOFTENING2);
                        let s = f64::from(o.mass) / (dist2 * dist2.sqrt());
                        for (a, d) in a.iter_mut().zip(d) {
                            *a += d * s;
                        }
                    }
                    a.map(|v| v as f32)
                })
                .collect()
        } else {
            // 2^30 pairs are too many for the CPU: check a sample of bodies.
            (0..n)
                .map(|i| {
                    if i % 97 == 0 {
                        accel_cpu(&bodies, i)
                    } else {
                        [f32::NAN; 3]
                    }
                })
                .collect()
        };
        Ok(NBody {
            bodies: gpu.to_device(&bodies)?,
            accel: gpu.alloc_zeroed(n)?,
            want,
        })
    }
}

fn accel_cpu(bodies: &[physics::Body], i: usize) -> [f32; 3] {
    let me = bodies[i];
    let mut a = [0.0f64; 3];
    for o in bodies {
        let d = [o.x - me.x, o.y - me.y, o.z - me.z].map(f64::from);
        let dist2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + f64::from(physics::SOFTENING2);
        let s = f64::from(o.mass) / (dist2 * dist2.sqrt());
        for (a, d) in a.iter_mut().zip(d) {
            *a += d * s;
        }
    }
    a.map(|v| v as f32)
}

impl Twin for NBody {
    fn name(&self) -> &'static str {
        "nbody_accel"
    }
    fn problem(&self) -> String {
        format!("{} bodies, all pairs", self.want.len())
    }
    fn work(&self) -> Work {
        let n = self.want.len() as f64;
        Work::Flops(20.0 * n * n)
    }
    fn launch(&mut self, side: Side, k: &Kernels, s: &Stream) -> Result<()> {
        let n = self.want.len();
        let config = LaunchConfig::for_elements(n, physics::BLOCK);
        match side {
            Side::Rust => k.rust.nbody_accel(s, config, &self.bodies, &mut self.accel),
            Side::Cuda => {
                let mut l = cuda(k, self.name(), s, config)?;
                l.input_ptr("bodies", &self.bodies)
                    .output_ptr("accel", &mut self.accel)
                    .value("n", &n32(n));
                go(l)
            }
        }
    }
    fn clear(&mut self) -> Result<()> {
        zero(&mut self.accel)
    }
    fn verify(&self) -> Result<std::result::Result<(), String>> {
        let got = self.accel.to_vec()?;
        let (mut g, mut w) = (Vec::<f32>::new(), Vec::<f32>::new());
        for (a, want) in got.iter().zip(&self.want) {
            if !want[0].is_nan() {
                g.extend([a.x, a.y, a.z]);
                w.extend(want);
            }
        }
        // rsqrt.approx and summation order: relative error grows with the body count.
        let scale = w.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        Ok(close(&g, &w, 1e-3, 1e-4 * scale))
    }
}

struct Bitonic {
    keys: DeviceBuffer<u32>,
    out: DeviceBuffer<u32>,
    want: Vec<u32>,
}

impl Bitonic {
    fn new(gpu: &Gpu, n: usize) -> Result<Self> {
        assert!(
            n.is_multiple_of(sort::SORT_TILE),
            "bitonic twin: length must be a multiple of the tile"
        );
        let mut rng = SplitMix64::new(17);
        let keys: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
        let mut want = keys.clone();
        for tile in want.chunks_mut(sort::SORT_TILE) {
            tile.sort_unstable();
        }
        Ok(Bitonic {
            keys: gpu.to_device(&keys)?,
            out: gpu.alloc_zeroed(n)?,
            want,
        })
    }
}

impl Twin for Bitonic {
    fn name(&self) -> &'static str {
        "bitonic_sort_shared"
    }
    fn problem(&self) -> String {
        format!("{} u32 keys, tiles of {}", self.want.len(), sort::SORT_TILE)
    }
    fn work(&self) -> Work {
        Work::Bytes(8.0 * self.want.len() as f64)
    }
    fn launch(&mut self, side: Side, k: &Kernels, s: &Stream) -> Result<()> {
        let config = LaunchConfig::new(
            (self.want.len() / sort::SORT_TILE) as u32,
            (sort::SORT_TILE / 2) as u32,
        );
        match side {
            Side::Rust => k
                .rust
                .bitonic_sort_shared(s, config, &self.keys, &mut self.out),
            Side::Cuda => {
                let mut l = cuda(k, self.name(), s, config)?;
                l.input_ptr("keys", &self.keys)
                    .output_ptr("out", &mut self.out);
                go(l)
            }
        }
    }
    fn clear(&mut self) -> Result<()> {
        zero(&mut self.out)
    }
    fn verify(&self) -> Result<std::result::Result<(), String>> {
        Ok(exact(&self.out.to_vec()?, &self.want))
    }
}
