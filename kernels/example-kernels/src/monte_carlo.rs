//! Monte Carlo pricing of a European call option: every thread simulates its own paths from its
//! own Philox4x32-10 stream (the seed, and its global index as the subsequence), and writes the
//! sum and the sum of squares of its discounted-later payoffs.

use gpu::prelude::*;
use gpu::random::Philox4x32;

/// A European call on a stock following geometric Brownian motion.
#[derive(Clone, Copy, Debug, PartialEq, DeviceCopy)]
#[repr(C)]
pub struct CallOption {
    /// Price today.
    pub spot: f32,
    /// Strike price.
    pub strike: f32,
    /// Risk-free rate (continuously compounded, per year).
    pub rate: f32,
    /// Volatility (per √year).
    pub volatility: f32,
    /// Time to expiry in years.
    pub maturity: f32,
}

/// Thread `i` draws `4 · quads` normals `z` from stream `(seed, i)` and adds the payoffs
/// `max(S·exp((r - σ²/2)T + σ√T·z) - K, 0)` into `sums[i]`, their squares into `squares[i]`
/// (in `f64`: millions of paths). Launch exactly `sums.len()` threads.
#[kernel]
pub fn european_call_paths(
    option: CallOption,
    seed: u64,
    quads: u32,
    mut sums: DisjointSlice<f64>,
    mut squares: DisjointSlice<f64>,
) {
    let i = thread::global_index();
    let mut rng = Philox4x32::new(seed, i.get() as u64, 0);
    let sigma = option.volatility;
    let drift = (option.rate - 0.5 * sigma * sigma) * option.maturity;
    let vol = sigma * math::sqrt(option.maturity);
    let (mut sum, mut sum2) = (0.0f64, 0.0f64);
    for _ in 0..quads {
        for z in rng.normal_f32x4() {
            let st = option.spot * math::exp_approx(drift + vol * z);
            let payoff = (st - option.strike).max(0.0) as f64;
            sum += payoff;
            sum2 += payoff * payoff;
        }
    }
    sums.set(i, sum);
    squares.set(i, sum2);
}
