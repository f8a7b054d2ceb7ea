//! One thread per element: vector add, saxpy, Black-Scholes.

use gpu::prelude::*;

/// Threads per block of the element-wise kernels.
pub const BLOCK: u32 = 256;

/// `out[i] = a[i] + b[i]`.
#[kernel(block(256), grid_dims(1))]
pub fn vector_add(a: &[f32], b: &[f32], mut out: DisjointSlice<f32>) {
    let i = thread::global_index();
    if let Some(o) = out.get_mut(i) {
        *o = a[i.get()] + b[i.get()];
    }
}

/// `out[i] = alpha * x[i] + y[i]` with a grid-stride loop (a fixed grid covers any length).
#[kernel(block(256), grid_dims(1))]
pub fn saxpy(alpha: f32, x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
    for i in thread::grid_stride(out.len()) {
        out.set(i, alpha * x[i.get()] + y[i.get()]);
    }
}

/// Option parameters shared by every option of a Black-Scholes batch.
#[derive(Debug, Clone, Copy, PartialEq, DeviceCopy)]
#[repr(C)]
pub struct Market {
    /// Risk-free rate.
    pub riskfree: f32,
    /// Volatility.
    pub volatility: f32,
}

/// Cumulative normal distribution, the polynomial approximation of CUDA's BlackScholes sample.
#[inline(always)]
pub fn cnd(d: f32) -> f32 {
    const A1: f32 = 0.319_381_53;
    const A2: f32 = -0.356_563_78;
    const A3: f32 = 1.781_477_9;
    const A4: f32 = -1.821_256;
    const A5: f32 = 1.330_274_4;
    const RSQRT2PI: f32 = 0.398_942_3;
    let k = 1.0 / (1.0 + 0.231_641_9 * d.abs());
    let c = RSQRT2PI
        * gpu::math::exp_approx(-0.5 * d * d)
        * (k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5)))));
    if d > 0.0 { 1.0 - c } else { c }
}

/// European call and put prices for each (price, strike, years) option, grid-stride. Fast
/// hardware `exp`/`log` on both sides (the C++ twin uses `__expf`/`__logf`).
#[kernel(block(256), grid_dims(1))]
pub fn black_scholes(
    price: &[f32],
    strike: &[f32],
    years: &[f32],
    market: Market,
    mut call: DisjointSlice<f32>,
    mut put: DisjointSlice<f32>,
) {
    for i in thread::grid_stride(call.len()) {
        let (s, x, t) = (price[i.get()], strike[i.get()], years[i.get()]);
        let sqrt_t = gpu::math::sqrt(t);
        let d1 = (gpu::math::ln_approx(s / x)
            + (market.riskfree + 0.5 * market.volatility * market.volatility) * t)
            / (market.volatility * sqrt_t);
        let d2 = d1 - market.volatility * sqrt_t;
        let (cnd1, cnd2) = (cnd(d1), cnd(d2));
        let discounted = x * gpu::math::exp_approx(-market.riskfree * t);
        call.set(i, s * cnd1 - discounted * cnd2);
        put.set(i, discounted * (1.0 - cnd2) - s * (1.0 - cnd1));
    }
}
