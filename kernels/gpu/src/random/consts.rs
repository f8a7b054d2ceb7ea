//! The `f64` distributions' constants in the GPU's constant memory.
//!
//! An `f64` constant whose low 32 bits are not zero cannot be an immediate operand of a SASS
//! double instruction: ptxas builds each from two uniform moves, again in every loop iteration
//! (the uniform registers cannot hold them all), which was 56 of the 205 instructions per
//! iteration of the normal `f64` fill. Declared in the `.const` state space and read at a
//! fixed address, a constant costs one uniform load (`ULDC.64`) per use instead. The table is a
//! `math::bank` constant bank; on the host and the simulator, [`k`] is the table entry itself.

/// Defines the table once, as the constant bank `RandomF64` (`math::bank`: the `.const` array
/// `__gpu_random_f64` on the GPU, the same values on the host) and an index constant per name.
macro_rules! table {
    ($($(#[$doc:meta])* $name:ident = $bits:literal;)*) => {
        crate::math::bank::const_bank! {
            /// The constants, in table order.
            pub(super) RandomF64 = "__gpu_random_f64", [$(f64::from_bits($bits)),*];
        }
        table!(@index 0usize, $($(#[$doc])* $name)*);
    };
    (@index $i:expr, $(#[$doc:meta])* $name:ident $($rest:tt)*) => {
        $(#[$doc])*
        pub(super) const $name: usize = $i;
        table!(@index $i + 1, $($rest)*);
    };
    (@index $i:expr,) => {};
}

table! {
    /// -2·Lg7 ... -2·Lg1: fdlibm's `e_log.c` coefficients times -2 (exact), highest degree
    /// first.
    LG7 = 0xbfd2f112df3e5244;
    LG6 = 0xbfd39a09d078c69f;
    LG5 = 0xbfd7466496cb03de;
    LG4 = 0xbfdc71c51d8e78af;
    LG3 = 0xbfe2492494229359;
    LG2 = 0xbfe999999997fa04;
    LG1 = 0xbff5555555555593;
    /// fdlibm's `k_sin.c` S6 ... S1.
    S6 = 0x3de5d93a5acfd57c;
    S5 = 0xbe5ae5e68a2b9ceb;
    S4 = 0x3ec71de357b1fe7d;
    S3 = 0xbf2a01a019c161d5;
    S2 = 0x3f8111111110f8a6;
    S1 = 0xbfc5555555555549;
    /// fdlibm's `k_cos.c` C6 ... C1.
    C6 = 0xbda8fae9be8838d4;
    C5 = 0x3e21ee9ebdb4b1c4;
    C4 = 0xbe927e4f809c52ad;
    C3 = 0x3efa01a019cb1590;
    C2 = 0xbf56c16c16c15177;
    C1 = 0x3fa555555555554c;
    /// 2π rounded.
    TAU = 0x401921fb54442d18;
    /// -2 times fdlibm's `ln2_hi` (ln 2's upper 32 bits; `float::LN2_HI`).
    NEG2_LN2_HI = 0xbff62e42fee00000;
    /// -2 times fdlibm's `ln2_lo` (the part of ln 2 below its upper 32 bits).
    NEG2_LN2_LO = 0xbdfa39ef35793c76;
    /// 1 - 2^-53: `uniform_f64`'s shift from `[1, 2)` to the cell midpoints in `(0, 1)`.
    UNIFORM_SHIFT = 0x3fefffffffffffff;
    /// 2^52 + 1023: `neg2_ln_f64`'s exponent from the bits `2^52 + (e + 1023)`.
    EXP_BIAS = 0x43300000000003ff;
}

/// Constant `I` of the table (one of the names above).
#[inline(always)]
pub(super) fn k<const I: usize>() -> f64 {
    RandomF64::get::<I>()
}
