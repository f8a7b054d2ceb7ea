//! `fill_uniform_<t>`, `fill_normal_<t>`: Philox4x32-10 fills (`gpu::device::random_fill`),
//! each thread turning one counter block into 16 bytes of output. Parameters after the stream
//! position: `(a, b)` = `(low, high)` for the uniform floats (ignored for `u32`),
//! `(mean, std_dev)` for the normals.

use gpu::math::{fma, fma_f64};
use gpu::random::{box_muller_f32, box_muller_f64, uniform_f32, uniform_f64};

gpu::random_fill_kernel!(
    fill_uniform_u32,
    u32,
    4,
    u32,
    |w: [u32; 4], _: u32, _: u32| w
);

gpu::random_fill_kernel!(
    fill_uniform_f32,
    f32,
    4,
    f32,
    |w: [u32; 4], lo: f32, hi: f32| { w.map(|x| fma(uniform_f32(x), hi - lo, lo)) }
);

gpu::random_fill_kernel!(
    fill_uniform_f64,
    f64,
    2,
    f64,
    |w: [u32; 4], lo: f64, hi: f64| {
        [uniform_f64(w[0], w[1]), uniform_f64(w[2], w[3])].map(|u| fma_f64(u, hi - lo, lo))
    }
);

gpu::random_fill_kernel!(
    fill_normal_f32,
    f32,
    4,
    f32,
    |w: [u32; 4], mean: f32, sd: f32| {
        let [a, b] = box_muller_f32(w[0], w[1]);
        let [c, d] = box_muller_f32(w[2], w[3]);
        [a, b, c, d].map(|z| fma(z, sd, mean))
    }
);

gpu::random_fill_kernel!(
    fill_normal_f64,
    f64,
    2,
    f64,
    |w: [u32; 4], mean: f64, sd: f64| { box_muller_f64(w).map(|z| fma_f64(z, sd, mean)) }
);
