//! `fill_uniform_<t>`, `fill_normal_<t>`: Philox4x32-10 fills (`gpu::device::random_fill`),
//! each thread turning one counter block into 16 bytes of output. Parameters after the stream
//! position: `(a, b)` = `(low, high)` for the uniform floats (ignored for `u32`),
//! `(mean, std_dev)` for the normals.

use gpu::math::{fma, fma_f64};
use gpu::random::{normal_pair_f32, normal_pair_f64, uniform_f32, uniform_f64};

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
        let [a, b] = normal_pair_f32(w[0], w[1], mean, sd);
        let [c, d] = normal_pair_f32(w[2], w[3], mean, sd);
        [a, b, c, d]
    }
);

gpu::random_fill_kernel!(
    fill_normal_f64,
    f64,
    2,
    f64,
    |w: [u32; 4], mean: f64, sd: f64| { normal_pair_f64(w, mean, sd) }
);
